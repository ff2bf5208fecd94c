#pragma once
/// \file all.ipp
/// The numerics room's compiled code, for <xquant/src.hpp>: every .ipp of numerics/impl/.

