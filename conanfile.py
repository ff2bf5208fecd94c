"""Conan 2 recipe for xquant, a header-only C++17 library.

    conan create . --build=missing                      # with Conan Center's xtensor & co.
    bash scripts/conan_create.sh                        # offline, Debian's headers (see
                                                        # conan/profiles/debian-system)

Consumers get `find_package(xquant)` and the target `xquant::xquant`, with the same
interface as the CMake export: C++17, xtensor + xsimd + xtl, OpenBLAS (CBLAS, for
kernels/gemm.hpp), zlib (gzip-compressed IDX files, io/idx.hpp), nlohmann_json
(checkpoints, io/checkpoint.hpp), Threads, OpenMP (option
with_openmp) and -ffp-contract=off (bit-exact numerics, cmake/xquantNumerics.cmake).
"""
import os
import re

from conan import ConanFile
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir

required_conan_version = ">=2.4"


class XquantConan(ConanFile):
    name = "xquant"
    description = ("Header-only C++17 fake quantization and quantization-aware training "
                   "over xtensor")
    topics = ("quantization", "qat", "fake-quantization", "neural-networks", "header-only")
    package_type = "header-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_openmp": [True, False]}
    default_options = {
        "with_openmp": True,
        # No XTENSOR_USE_XSIMD: xtensor's own expressions stay scalar, as with Debian's
        # xtensor CMake config, so that a Conan build and a CMake build of the same code
        # give the same bits (xsimd's vectorized math functions round differently from
        # libm). xquant's SIMD kernels use xsimd directly.
        "xtensor/*:xsimd": False,
    }
    no_copy_source = True
    exports_sources = ("include/*", "src/*", "CMakeLists.txt", "cmake/*", "LICENSE*")

    def set_version(self):
        # One source of truth: project(xquant VERSION x.y.z) in CMakeLists.txt.
        text = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        m = re.search(r"project\s*\(\s*xquant\s+VERSION\s+([0-9.]+)", text)
        self.version = m.group(1)

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # Ranges that Debian 12 (0.24.3 / 8.1.0 / 0.7.2) and Conan Center both satisfy.
        self.requires("xtensor/[>=0.24.3 <0.25]", transitive_headers=True)
        self.requires("xsimd/[>=8.1.0 <8.2]", transitive_headers=True)
        self.requires("xtl/[>=0.7.2 <0.8]", transitive_headers=True)
        # Libraries the headers call (cblas_sgemm, inflate): their headers and libraries
        # reach xquant's consumers. Ranges that Debian 12 (0.3.21 / 1.2.13) and Conan
        # Center (openblas 0.3.2x, zlib 1.2.13 / 1.3.x) both satisfy.
        self.requires("openblas/[>=0.3.21 <0.4]", transitive_headers=True, transitive_libs=True)
        self.requires("zlib/[>=1.2.13 <2]", transitive_headers=True, transitive_libs=True)
        # Checkpoints (io/checkpoint.hpp) are CBOR through nlohmann::json (header-only).
        # Debian 12 has 3.11.2; 3.9 added what xquant uses (binary values, ordered_json).
        self.requires("nlohmann_json/[>=3.9 <4]", transitive_headers=True)

    def package_id(self):
        self.info.clear()

    def validate(self):
        if self.settings.get_safe("compiler.cppstd"):
            check_min_cppstd(self, 17)

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["XQ_BUILD_TESTS"] = False
        tc.cache_variables["XQ_BUILD_BENCHMARKS"] = False
        tc.cache_variables["XQ_BUILD_EXAMPLES"] = False
        tc.cache_variables["XQ_WITH_CUDA"] = False
        tc.cache_variables["XQ_NATIVE_ARCH"] = False
        tc.cache_variables["XQ_WITH_OPENMP"] = bool(self.options.with_openmp)
        tc.generate()
        deps = CMakeDeps(self)
        # CMakeLists.txt does find_package(BLAS) and links BLAS::BLAS (CMake's FindBLAS
        # names, so that any CBLAS works there); Conan's openblas is find_package(OpenBLAS)
        # / OpenBLAS::OpenBLAS. Give it FindBLAS's names for xquant's own configure step
        # (the toolchain prefers config files, so this one wins over FindBLAS). zlib's
        # names are FindZLIB's already (ZLIB / ZLIB::ZLIB).
        deps.set_property("openblas", "cmake_file_name", "BLAS")
        deps.set_property("openblas", "cmake_target_name", "BLAS::BLAS")
        deps.generate()

    def build(self):
        # Nothing to compile; configuring checks that the dependencies resolve.
        cmake = CMake(self)
        cmake.configure()

    def package(self):
        copy(self, "LICENSE*", src=self.source_folder,
             dst=os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()
        # Consumers get CMakeDeps' xquant-config.cmake; the build modules below add what
        # our own exported target carries on top of includes and requirements.
        rmdir(self, os.path.join(self.package_folder, "share"))
        for module in ("xquantNumerics.cmake", "xquant-conan-interface.cmake",
                       "xquant-conan-openmp.cmake"):
            copy(self, module, src=os.path.join(self.source_folder, "cmake"),
                 dst=os.path.join(self.package_folder, "lib", "cmake", "xquant"))

    def package_info(self):
        self.cpp_info.set_property("cmake_file_name", "xquant")
        self.cpp_info.set_property("cmake_target_name", "xquant::xquant")
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []

        modules = [os.path.join("lib", "cmake", "xquant", "xquant-conan-interface.cmake")]
        if self.options.with_openmp:
            modules.append(os.path.join("lib", "cmake", "xquant", "xquant-conan-openmp.cmake"))
        self.cpp_info.set_property("cmake_build_modules", modules)

        # For generators other than CMakeDeps (pkg-config, Meson, ...): the numerics flag
        # and the thread library. (CMakeDeps gets them from the build modules too.)
        if str(self.settings.compiler) in ("gcc", "clang", "apple-clang", "intel-cc"):
            self.cpp_info.cxxflags.append("-ffp-contract=off")
        if self.settings.os in ("Linux", "FreeBSD"):
            self.cpp_info.system_libs.append("pthread")
