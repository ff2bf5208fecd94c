#pragma once
#include <xquant/config.hpp>
