#pragma once
/// \file all.ipp
/// The core room's compiled code, for <xquant/src.hpp>: every .ipp of core/impl/.

