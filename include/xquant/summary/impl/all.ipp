#pragma once
/// \file all.ipp
/// The summary room's compiled code, for <xquant/src.hpp>: every .ipp of summary/impl/.

