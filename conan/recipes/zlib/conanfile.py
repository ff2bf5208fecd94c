"""zlib/1.2.13@system — a wrapper for Debian's `zlib1g-dev` (see conan/recipes/system-headers).
The CMake names are Conan Center's (and CMake's FindZLIB's): find_package(ZLIB), target
ZLIB::ZLIB, as a config file and as a find module.
"""
from conan import ConanFile


class ZlibSystemConan(ConanFile):
    python_requires = "xquant-system-headers/1.0@system"
    python_requires_extend = "xquant-system-headers.SystemLibrary"
    name = "zlib"
    version = "1.2.13"
    description = "System (Debian zlib1g-dev) zlib, wrapped for Conan 2"
    _header = "zlib.h"
    _version_regex = r'#define\s+ZLIB_VERSION\s+"([0-9]+\.[0-9]+(?:\.[0-9]+)*)'
    _debian_package = "zlib1g-dev"
    _libs = ("z",)
    _cmake_file_name = "ZLIB"
    _cmake_target_name = "ZLIB::ZLIB"
    _pkg_config_name = "zlib"
    _cmake_find_mode = "both"
