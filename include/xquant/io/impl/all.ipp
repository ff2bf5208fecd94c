#pragma once
/// \file all.ipp
/// The io room's compiled code, for <xquant/src.hpp>: every .ipp of io/impl/.

