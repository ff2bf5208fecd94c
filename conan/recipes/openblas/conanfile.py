"""openblas/0.3.21@system — a wrapper for Debian's `libopenblas-dev` (see
conan/recipes/system-headers). Debian puts cblas.h and openblas_config.h in
/usr/include/<multiarch> (through the alternatives system) and libopenblas.so in
/usr/lib/<multiarch>. The CMake names are Conan Center's: find_package(OpenBLAS),
target OpenBLAS::OpenBLAS.
"""
from conan import ConanFile


class OpenblasSystemConan(ConanFile):
    python_requires = "xquant-system-headers/1.0@system"
    python_requires_extend = "xquant-system-headers.SystemLibrary"
    name = "openblas"
    version = "0.3.21"
    description = "System (Debian libopenblas-dev) OpenBLAS, wrapped for Conan 2"
    _header = "openblas_config.h"
    _version_regex = r'#define\s+OPENBLAS_VERSION\s+"\s*OpenBLAS\s+([0-9]+\.[0-9]+(?:\.[0-9]+)*)'
    _other_headers = ("cblas.h",)
    _debian_package = "libopenblas-dev"
    _libs = ("openblas",)
    _cmake_file_name = "OpenBLAS"
    _cmake_target_name = "OpenBLAS::OpenBLAS"
    _pkg_config_name = "openblas"
