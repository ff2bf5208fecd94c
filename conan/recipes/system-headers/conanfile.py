"""xquant-system-headers/1.0@system — the shared base of the wrappers in conan/recipes/.

Each wrapper stands for a Debian package: it packages nothing, package_info() points
consumers at what the system package installed, and validate() checks it is there and of
the wrapper's version. The CMake and pkg-config names are those of the Conan Center
recipes, so a recipe that requires `xsimd/...` or `openblas/...` works unchanged once
conan/profiles/debian-system maps it to the wrapper ([replace_requires]).

Two bases:

- SystemHeaders (xtl, xsimd, xtensor): headers only.
- SystemLibrary (openblas, zlib): headers and a shared library, linked by name
  (cpp_info.system_libs) when it sits in a directory the linker searches anyway.

A wrapper sets: name, version, `_header` (a header that holds the version), `_debian_package`
and either `_macro` (the prefix of MAJOR/MINOR/PATCH macros, e.g. XSIMD_VERSION) or
`_version_regex` (a regex whose group 1 is "x.y.z"). Optional: `_other_headers` (more
headers that must be there), `_cmake_file_name`, `_cmake_target_name`, `_pkg_config_name`,
`_cmake_find_mode` (default: the package name, find_mode config). SystemLibrary adds `_libs`
(library names without lib prefix and suffix).

Headers and libraries are looked for in <prefix>/include/<multiarch> then <prefix>/include
(Debian puts arch-dependent headers such as OpenBLAS's cblas.h in the former) and
<prefix>/lib/<multiarch>, <prefix>/lib64, <prefix>/lib.
Conf `user.xquant:system_prefix` (default /usr) names another prefix, `user.xquant:multiarch`
another multiarch triplet (default: from the arch setting, e.g. x86_64-linux-gnu).
"""
import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration

# Debian's multiarch triplets for Conan's arch setting.
_MULTIARCH = {
    "x86_64": "x86_64-linux-gnu",
    "x86": "i386-linux-gnu",
    "armv8": "aarch64-linux-gnu",
    "armv7hf": "arm-linux-gnueabihf",
    "armv7": "arm-linux-gnueabi",
    "ppc64le": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
    "mips64": "mips64el-linux-gnuabi64",
}


class SystemHeaders:
    user = "system"
    package_type = "header-library"
    _version_regex = None
    _macro = None
    _other_headers = ()
    _cmake_file_name = None
    _cmake_target_name = None
    _pkg_config_name = None
    _cmake_find_mode = None

    def _prefix(self):
        return self.conf.get("user.xquant:system_prefix", default="/usr")

    def _multiarch(self):
        configured = self.conf.get("user.xquant:multiarch", default=None)
        if configured:
            return configured
        return _MULTIARCH.get(str(self.settings.get_safe("arch")))

    def _include_candidates(self):
        base = os.path.join(self._prefix(), "include")
        multiarch = self._multiarch()
        return ([os.path.join(base, multiarch)] if multiarch else []) + [base]

    def _include_dir(self):
        """The first candidate that holds _header (the plain include dir when none does)."""
        for d in self._include_candidates():
            if os.path.isfile(os.path.join(d, self._header)):
                return d
        return os.path.join(self._prefix(), "include")

    def _compiler_include_dirs(self):
        # Searched by the compiler already: naming them again with -isystem would reorder
        # the system directories and break libstdc++'s #include_next.
        multiarch = self._multiarch()
        dirs = {"/usr/include", "/usr/local/include"}
        if multiarch:
            dirs.add(os.path.join("/usr/include", multiarch))
        return dirs

    def _system_version(self):
        path = os.path.join(self._include_dir(), self._header)
        if not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if self._version_regex:
            m = re.search(self._version_regex, text)
            return m.group(1) if m else None
        parts = []
        for part in ("MAJOR", "MINOR", "PATCH"):
            m = re.search(r"#define\s+%s_%s\s+(\d+)" % (self._macro, part), text)
            if not m:
                return None
            parts.append(m.group(1))
        return ".".join(parts)

    def _install_hint(self):
        return (f"install it with `apt-get install {self._debian_package}` "
                "(or bash scripts/install_deps.sh)")

    def package_id(self):
        self.info.clear()

    def validate(self):
        found = self._system_version()
        if found is None:
            searched = " or ".join(os.path.join(d, self._header) for d in self._include_candidates())
            raise ConanInvalidConfiguration(
                f"{self.ref}: {searched} not found (or without a version); {self._install_hint()}")
        if found != str(self.version):
            raise ConanInvalidConfiguration(
                f"{self.ref}: the system has {self.name} {found}, this wrapper is for "
                f"{self.version}; update conan/recipes/{self.name} and conan/profiles/debian-system")
        for header in self._other_headers:
            if not os.path.isfile(os.path.join(self._include_dir(), header)):
                raise ConanInvalidConfiguration(
                    f"{self.ref}: {os.path.join(self._include_dir(), header)} not found; "
                    f"{self._install_hint()}")

    def package_info(self):
        name = str(self.name)
        self.cpp_info.set_property("cmake_file_name", self._cmake_file_name or name)
        self.cpp_info.set_property("cmake_target_name", self._cmake_target_name or name)
        self.cpp_info.set_property("pkg_config_name", self._pkg_config_name or name)
        if self._cmake_find_mode:
            self.cpp_info.set_property("cmake_find_mode", self._cmake_find_mode)
        include_dir = self._include_dir()
        self.cpp_info.includedirs = [] if include_dir in self._compiler_include_dirs() else [include_dir]
        self.cpp_info.bindirs = []
        self.cpp_info.libdirs = []


class SystemLibrary(SystemHeaders):
    package_type = "shared-library"
    settings = "os", "arch", "compiler", "build_type"
    _libs = ()

    def _lib_candidates(self):
        prefix = self._prefix()
        multiarch = self._multiarch()
        dirs = [os.path.join(prefix, "lib", multiarch)] if multiarch else []
        return dirs + [os.path.join(prefix, "lib64"), os.path.join(prefix, "lib")]

    def _linker_lib_dirs(self):
        # Searched by the linker already: link by name (-lfoo), no -L.
        multiarch = self._multiarch()
        dirs = {"/usr/lib", "/lib", "/usr/lib64", "/lib64"}
        if multiarch:
            dirs |= {os.path.join("/usr/lib", multiarch), os.path.join("/lib", multiarch)}
        return dirs

    def _lib_dir(self):
        """The first candidate that holds a shared lib<name> for every name in _libs."""
        def has(d, lib):
            return any(os.path.exists(os.path.join(d, f"lib{lib}{ext}")) for ext in (".so", ".dylib"))
        for d in self._lib_candidates():
            if all(has(d, lib) for lib in self._libs):
                return d
        return None

    def validate(self):
        super().validate()
        if self._lib_dir() is None:
            wanted = ", ".join(f"lib{lib}.so" for lib in self._libs)
            raise ConanInvalidConfiguration(
                f"{self.ref}: {wanted} not found in {', '.join(self._lib_candidates())}; "
                f"{self._install_hint()}")

    def package_info(self):
        super().package_info()
        lib_dir = self._lib_dir()
        if lib_dir is None or lib_dir in self._linker_lib_dirs():
            self.cpp_info.system_libs = list(self._libs)
        else:
            # Elsewhere: CMakeDeps resolves the libraries to full paths in lib_dir.
            self.cpp_info.libdirs = [lib_dir]
            self.cpp_info.libs = list(self._libs)


class SystemHeadersRecipe(ConanFile):
    name = "xquant-system-headers"
    version = "1.0"
    user = "system"
    package_type = "python-require"
