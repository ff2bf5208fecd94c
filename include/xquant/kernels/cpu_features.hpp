#pragma once
/// \file cpu_features.hpp
/// What the CPU the program runs on can do, and which kernel family the integer and binary
/// engines use on it.
///
/// A program built with `-march=native` knows its instruction set at compile time; one built
/// for a generic x86-64 (what a user ships to customers) does not. The engines' fast kernels
/// are therefore compiled for each instruction set they have a kernel for (GCC's and clang's
/// target attributes, deploy/engine/impl/isa_region.hpp), whatever the build's flags, and the
/// engine picks one per call from what CPUID and the operating system report here. Where
/// target attributes are not available (another compiler, a CUDA translation unit, another
/// architecture) only the kernels the build's flags allow exist.
///
/// The choice can be capped, to compare kernels or to reproduce another machine's path:
/// the environment variable XQ_CPU_ISA (a name from isa_name(), read once), or for the
/// calling program from now on set_isa_cap(), or for a scope isa_cap_scope (process-wide:
/// the engines' worker threads read it too). Every kernel computes the same integers, so a
/// cap changes speed, never results.

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../config.hpp"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define XQ_X86_CPUID 1
#else
#define XQ_X86_CPUID 0
#endif

namespace xq::kernels {

/// The instruction sets the engines have kernels for, from least to most preferred. The
/// integer GEMMs: `portable` (plain C++), `avx2` (VPMADDWD on int16, 8 lanes),
/// `avx512bw` (VPMADDWD, 16 lanes), `avx_vnni` (VPDPBUSD on u8 x s8, 8 lanes, VEX: Intel's
/// client cores and Zen 5 without AVX-512 in use), `avx512_vnni` (VPDPBUSD, 16 lanes). The
/// binary GEMMs: portable POPCNT, `avx2` (nibble lookup), `avx512_vpopcntdq` (VPOPCNTQ).
enum class cpu_isa : int { portable = 0, avx2 = 1, avx512bw = 2, avx_vnni = 3, avx512_vnni = 4, avx512_vpopcntdq = 5 };

inline const char* isa_name(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::portable: return "portable";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx512bw: return "avx512bw";
    case cpu_isa::avx_vnni: return "avx_vnni";
    case cpu_isa::avx512_vnni: return "avx512_vnni";
    case cpu_isa::avx512_vpopcntdq: return "avx512_vpopcntdq";
  }
  return "?";
}

/// What CPUID says, masked by what the OS saves on a context switch (XGETBV): a CPU with
/// AVX-512 under an OS that does not save the ZMM registers cannot use them.
struct cpu_features {
  bool avx2 = false, fma = false, popcnt = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_vnni = false, avx512_vpopcntdq = false;
  bool avx_vnni = false;

  /// Whether `isa` can run here.
  bool has(cpu_isa isa) const noexcept {
    switch (isa) {
      case cpu_isa::portable: return true;
      case cpu_isa::avx2: return avx2 && fma;
      case cpu_isa::avx512bw: return avx2 && fma && avx512f && avx512bw && avx512vl;
      case cpu_isa::avx_vnni: return avx2 && fma && avx_vnni;
      case cpu_isa::avx512_vnni: return avx2 && fma && avx512f && avx512bw && avx512vl && avx512_vnni;
      case cpu_isa::avx512_vpopcntdq: return avx2 && fma && avx512f && avx512bw && avx512vl && avx512_vpopcntdq;
    }
    return false;
  }
  /// The flags as one line ("avx2 fma avx512bw avx512_vnni ..."), for benchmark and test logs.
  std::string describe() const {
    std::string s;
    auto add = [&](bool on, const char* name) {
      if (!on) return;
      if (!s.empty()) s += ' ';
      s += name;
    };
    add(avx2, "avx2"), add(fma, "fma"), add(popcnt, "popcnt"), add(avx512f, "avx512f"), add(avx512bw, "avx512bw");
    add(avx512vl, "avx512vl"), add(avx512_vnni, "avx512_vnni"), add(avx512_vpopcntdq, "avx512_vpopcntdq");
    add(avx_vnni, "avx_vnni");
    return s.empty() ? "none" : s;
  }
};

}  // namespace xq::kernels

// (In xq::detail: a namespace xq::kernels::detail would hide xq::detail from the kernels' headers.)
namespace xq::detail {
inline kernels::cpu_features detect_cpu_features() noexcept {
  kernels::cpu_features f;
#if XQ_X86_CPUID
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  f.fma = c & (1u << 12);
  f.popcnt = c & (1u << 23);
  unsigned xcr0_lo = 0;
  if (osxsave) {
    unsigned xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  }
  const bool ymm_saved = (xcr0_lo & 0x6u) == 0x6u;      // SSE and AVX state
  const bool zmm_saved = (xcr0_lo & 0xe6u) == 0xe6u;    // and opmask, ZMM0-15 upper halves, ZMM16-31
  f.fma = f.fma && avx && ymm_saved;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = avx && ymm_saved && (b & (1u << 5));
  f.avx512f = zmm_saved && (b & (1u << 16));
  f.avx512bw = f.avx512f && (b & (1u << 30));
  f.avx512vl = f.avx512f && (b & (1u << 31));
  f.avx512_vnni = f.avx512f && (c & (1u << 11));
  f.avx512_vpopcntdq = f.avx512f && (c & (1u << 14));
  const unsigned max_subleaf = a;
  if (max_subleaf >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx_vnni = f.avx2 && (a & (1u << 4));
  }
#endif
  return f;
}

/// XQ_CPU_ISA from the environment: the highest cpu_isa a kernel may use (-1: no cap). A
/// name that is none of isa_name()'s is ignored, with one line on stderr saying so (read
/// where no exception may leave: the first kernel call).
inline int isa_cap_from_environment() noexcept {
  const char* v = std::getenv("XQ_CPU_ISA");
  if (!v || !*v) return -1;
  for (int i = 0; i <= int(kernels::cpu_isa::avx512_vpopcntdq); ++i)
    if (!std::strcmp(v, kernels::isa_name(kernels::cpu_isa(i)))) return i;
  std::fprintf(stderr,
               "xquant: XQ_CPU_ISA=%s is not one of portable, avx2, avx512bw, avx_vnni, avx512_vnni, "
               "avx512_vpopcntdq; ignored (no cap)\n",
               v);
  return -1;
}

inline std::atomic<int>& isa_cap_storage() noexcept {
  static std::atomic<int> cap{isa_cap_from_environment()};
  return cap;
}
}  // namespace xq::detail

namespace xq::kernels {

/// This CPU, detected once.
inline const cpu_features& cpu() noexcept {
  static const cpu_features f = xq::detail::detect_cpu_features();
  return f;
}

/// The highest instruction set a kernel may use now (cpu_isa::avx512_vpopcntdq: no cap).
inline cpu_isa isa_cap() noexcept {
  const int cap = xq::detail::isa_cap_storage().load(std::memory_order_relaxed);
  return cap < 0 ? cpu_isa::avx512_vpopcntdq : cpu_isa(cap);
}
/// Whether a kernel of `isa` may run now: this CPU runs it and the cap allows it. Each kernel
/// family takes the most preferred of its kernels for which this holds.
inline bool isa_usable(cpu_isa isa) noexcept { return int(isa) <= int(isa_cap()) && cpu().has(isa); }

inline void set_isa_cap(cpu_isa cap) noexcept { xq::detail::isa_cap_storage().store(int(cap)); }

/// Caps the kernels' instruction set for a scope (tests, benchmarks): every kernel family
/// takes the best of its kernels at or below `cap` that this CPU runs.
class isa_cap_scope {
 public:
  explicit isa_cap_scope(cpu_isa cap) noexcept : saved_(xq::detail::isa_cap_storage().exchange(int(cap))) {}
  ~isa_cap_scope() { xq::detail::isa_cap_storage().store(saved_); }
  isa_cap_scope(const isa_cap_scope&) = delete;
  isa_cap_scope& operator=(const isa_cap_scope&) = delete;

 private:
  int saved_;
};

}  // namespace xq::kernels
