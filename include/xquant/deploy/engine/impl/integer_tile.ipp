// No include guard: integer_gemm.ipp includes this body once per instruction set, inside
// that instruction set's namespace and ISA region (kernels/isa_region.hpp), after defining
// there a struct `ops` with the set's registers and instructions:
//
//   using operand = std::int16_t or std::uint8_t  the A values, grouped G = 4 / sizeof per broadcast
//   using reg, areg                               16 int32 lanes of C in `regs` registers; a broadcast group of A
//   static constexpr std::size_t regs, tile_rows, tile_panels
//   reg load_w(const std::int8_t* block, std::size_t i)    register i of a 64-byte weight block
//   reg load_bias(const std::int32_t* b, std::size_t i)
//   areg broadcast(const operand* a)                       G values of A (4 bytes) into every lane
//   areg broadcast_tail(const operand* a, std::size_t n)   only the first n < G of them (the rest 0)
//   reg dot(reg acc, areg a, reg w)                        acc + the G products of each lane
//   void store(std::int32_t* c, reg v, std::size_t lanes)  the first `lanes` of v (lanes <= 16 / regs)
//   void store_requantized(std::int16_t* out, reg v, const float* m, lo, hi, lanes)
//        the same lanes requantized as requantize_float_row does: clamp(round(float(v) * m), lo, hi)
//
// The packed weights (integer_gemm.hpp): panel after panel of 16 columns; in a panel, group
// after group of K, 64 bytes each: for column j its G values of the group side by side.
// One broadcast of A's G values times one such block gives every column's G products.
//
// The tile keeps tile_rows x (tile_panels * 16) sums of C in registers for the whole of K,
// reading each weight block once per tile; the rows of A are given by their start
// addresses (a GEMM's rows, or a convolution's output pixels read straight from the image:
// then A's row is `segments` runs of `groups` groups, `segment_stride` values apart).

constexpr std::size_t group = 4 / sizeof(ops::operand);
constexpr std::size_t lanes_per_reg = 16 / ops::regs;

XQ_DEFINE_UNROLLED  // this region's own (kernels/unrolled.hpp says why)

/// One group of K for every row of a tile: the weights' registers once, then each row's
/// broadcast against them. A function, not a lambda: always inlined, so the accumulators
/// stay registers (a lambda's call left out of line, as GCC may leave one in an ISA
/// region, takes the array's address and so keeps it in memory).
template <std::size_t Panels, bool Partial>
XQ_ALWAYS_INLINE void tile_step(typename ops::reg (&acc)[ops::tile_rows][Panels * ops::regs],
                                const typename ops::operand* const (&at)[ops::tile_rows], const std::int8_t* wblock,
                                std::size_t panel_bytes, std::size_t tail) {
  constexpr std::size_t R = ops::regs;
  typename ops::reg wv[Panels * R];
  unrolled<Panels * R>([&](auto q) XQ_INLINE_LAMBDA { wv[q] = ops::load_w(wblock + (q / R) * panel_bytes, q % R); });
  unrolled<ops::tile_rows>([&](auto r) XQ_INLINE_LAMBDA {
    const typename ops::areg x = Partial ? ops::broadcast_tail(at[r], tail) : ops::broadcast(at[r]);
    unrolled<Panels * R>([&](auto q) XQ_INLINE_LAMBDA { acc[r][q] = ops::dot(acc[r][q], x, wv[q]); });
  });
}

/// tile_rows x tile_panels panels of C: c[r * ldc + 16 * p + j] = bias16[16 * p + j] +
/// sum over K of A row r times the panel's column j. `cols`: the valid columns of the last
/// panel (16 in all others). `tail`: the values in each segment's last group when fewer
/// than G (0: whole), the rest of that group left unread.
template <std::size_t Panels>
void product_tile(const ops::operand* const* a, std::size_t segments, std::size_t segment_stride,
                  std::size_t groups, std::size_t tail, const std::int8_t* w, std::size_t panel_bytes,
                  const std::int32_t* bias16, std::int32_t* c, std::size_t ldc, std::size_t cols,
                  const fused_requantization* rq = nullptr, std::int16_t* out = nullptr) {
  constexpr std::size_t Rows = ops::tile_rows, R = ops::regs;
  typename ops::reg acc[Rows][Panels * R];
  unrolled<Panels * R>([&](auto q) XQ_INLINE_LAMBDA {
    const typename ops::reg b = ops::load_bias(bias16 + (q / R) * 16, q % R);
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { acc[r][q] = b; });
  });
  const std::size_t whole = tail ? groups - 1 : groups;
  const std::int8_t* wblock = w;
  for (std::size_t s = 0; s < segments; ++s) {
    const typename ops::operand* at[Rows];
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { at[r] = a[r] + s * segment_stride; });
    for (std::size_t g = 0; g < whole; ++g) {
      tile_step<Panels, false>(acc, at, wblock, panel_bytes, tail);
      wblock += 64;
      unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { at[r] += group; });
    }
    if (tail) {
      tile_step<Panels, true>(acc, at, wblock, panel_bytes, tail);
      wblock += 64;
    }
  }
  unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
    unrolled<Panels * R>([&](auto q) XQ_INLINE_LAMBDA {
      const std::size_t first = (q / R) * 16 + (q % R) * lanes_per_reg;
      const std::size_t valid = q / R + 1 < Panels ? lanes_per_reg
                                : cols > (q % R) * lanes_per_reg ? std::min(lanes_per_reg, cols - (q % R) * lanes_per_reg)
                                                                 : 0;
      if (!valid) return;
      if (rq)
        ops::store_requantized(out + r * ldc + first, acc[r][q], rq->multipliers + first, rq->lo, rq->hi, valid);
      else
        ops::store(c + r * ldc + first, acc[r][q], valid);
    });
  });
}

/// C (m x n, row-major, ldc = n) = bias + A * W for the m rows of A at `rows`, W's
/// `panels` panels at w, or with `rq` those sums requantized into rq->out (m x n int16).
/// Full tiles write C directly; the last rows go through a scratch tile (their missing rows
/// read row 0 again), so each (Panels) tile is compiled once.
inline void product_rows(const ops::operand* const* rows, std::size_t m, std::size_t segments,
                         std::size_t segment_stride, std::size_t groups, std::size_t tail, const std::int8_t* w,
                         std::size_t panels, const std::int32_t* bias, std::size_t n, std::int32_t* c,
                         const fused_requantization* rq) {
  constexpr std::size_t Rows = ops::tile_rows, P = ops::tile_panels;
  const std::size_t panel_bytes = segments * groups * 64;
  for (std::size_t p = 0; p < panels; p += P) {
    const std::size_t width = std::min(P, panels - p), j = 16 * p;
    const std::size_t cols = std::min<std::size_t>(16 * width, n - j), last_cols = cols - 16 * (width - 1);
    alignas(64) std::int32_t bias_block[16 * P] = {};
    if (bias) std::copy(bias + j, bias + j + cols, bias_block);
    const std::int8_t* wp = w + p * panel_bytes;
    fused_requantization block_rq;
    if (rq) block_rq = {rq->multipliers + j, rq->lo, rq->hi, nullptr};
    const fused_requantization* brq = rq ? &block_rq : nullptr;
    auto run = [&](const ops::operand* const* a, std::int32_t* sums, std::int16_t* out, std::size_t ldc) {
      if (width == P)
        product_tile<P>(a, segments, segment_stride, groups, tail, wp, panel_bytes, bias_block, sums, ldc, last_cols, brq, out);
      else
        product_tile<1>(a, segments, segment_stride, groups, tail, wp, panel_bytes, bias_block, sums, ldc, last_cols, brq, out);
    };
    std::size_t i = 0;
    for (; i + Rows <= m; i += Rows)
      run(rows + i, rq ? nullptr : c + i * n + j, rq ? rq->out + i * n + j : nullptr, n);
    if (i < m) {
      const ops::operand* a[Rows];
      for (std::size_t r = 0; r < Rows; ++r) a[r] = rows[i + std::min(r, m - i - 1)];
      alignas(64) std::int32_t scratch[Rows * 16 * P];
      alignas(64) std::int16_t scratch16[Rows * 16 * P];
      run(a, scratch, scratch16, 16 * P);
      for (std::size_t r = 0; i + r < m; ++r) {
        if (rq)
          std::memcpy(rq->out + (i + r) * n + j, scratch16 + r * 16 * P, cols * sizeof(std::int16_t));
        else
          std::memcpy(c + (i + r) * n + j, scratch + r * 16 * P, cols * sizeof(std::int32_t));
      }
    }
  }
}
