#pragma once
/// \file all.ipp
/// The quantizers room's compiled code, for <xquant/src.hpp>: every .ipp of quantizers/impl/.

