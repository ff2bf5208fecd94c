// The xquant library of separate-compilation mode (target xquant::compiled): the
// non-template code of every header, compiled once. See include/xquant/config.hpp.
#include <xquant/src.hpp>
