#pragma once
/// \file all.ipp
/// The train room's compiled code, for <xquant/src.hpp>: every .ipp of train/impl/.

#include "adam.ipp"
#include "bop.ipp"
#include "dataset.ipp"
#include "default_metric.ipp"
#include "fit.ipp"
#include "losses.ipp"
#include "metrics.ipp"
#include "parameter_list.ipp"
#include "progress.ipp"
#include "rank_agreement.ipp"
#include "schedule.ipp"
#include "sgd.ipp"
#include "sensitivity.ipp"
#include "format_budget.ipp"
#include "distillation.ipp"
