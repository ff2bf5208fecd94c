#pragma once
/// \file all.ipp
/// The wrappers room's compiled code, for <xquant/src.hpp>: every .ipp of wrappers/impl/.

