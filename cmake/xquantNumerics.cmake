# xquantNumerics.cmake — the compile options every translation unit that includes xquant
# must be built with. Included by the top-level CMakeLists.txt (which puts them on the
# INTERFACE of xquant::xquant, so they are exported with the installed target) and by the
# Conan build module (cmake/xquant-conan-interface.cmake), so that CMake and Conan
# consumers get the same flags from this one list.
#
# Why: xquant's fake-quant operators must reproduce TensorFlow's and PyTorch's results
# bit for bit (docs/semantics.md), and its scalar, SIMD and CUDA kernels must agree with each
# other bit for bit (DESIGN.md §9). The peers compute `x * inv_scale + zero_point`,
# `(q - zp) * scale` and similar as a separately rounded multiply followed by a separately
# rounded add. A compiler allowed to contract `a * b + c` into one fused multiply-add
# (GCC's default -ffp-contract=fast outside strict ISO mode, Clang's `on`, nvcc's default
# --fmad=true, and any -march that has FMA) rounds once instead of twice, and a value that
# sits next to a rounding boundary then quantizes to a different integer. So contraction
# is switched off for every consumer, not only for xquant's own tests.
#
# The options are generator expressions, evaluated in the consumer's build:
#   - C++ with GCC, Clang, AppleClang, IntelLLVM:  -ffp-contract=off
#     (MSVC does not contract under its default /fp:precise since VS 2022, and never
#      across statements, so nothing is added there.)
#   - CUDA with nvcc: --fmad=false for device code, and -ffp-contract=off for the host
#     compiler (not on Windows, where the host compiler is MSVC).
#   - CUDA with Clang: -ffp-contract=off (Clang's CUDA default is `fast`).

set(XQ_NUMERICS_COMPILE_OPTIONS
  "$<$<COMPILE_LANG_AND_ID:CXX,GNU,Clang,AppleClang,IntelLLVM>:-ffp-contract=off>"
  "$<$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>:--fmad=false>"
  "$<$<AND:$<COMPILE_LANG_AND_ID:CUDA,NVIDIA>,$<NOT:$<PLATFORM_ID:Windows>>>:-Xcompiler=-ffp-contract=off>"
  "$<$<COMPILE_LANG_AND_ID:CUDA,Clang>:-ffp-contract=off>"
)
