#pragma once
/// \file all.ipp
/// The train room's compiled code, for <xquant/src.hpp>: every .ipp of train/impl/.

