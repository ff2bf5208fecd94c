#pragma once
/// \file all.ipp
/// The transform room's compiled code, for <xquant/src.hpp>: every .ipp of transform/impl/.

