// No include guard: block_scaled_gemm.ipp includes this body once per instruction set,
// inside that set's namespace and ISA region (kernels/isa_region.hpp), after defining
// there the struct `policy` (block_scaled_gemm.ipp lists its members): the tile, its last
// rows and the items of C, compiled with that set's instructions.

XQ_DEFINE_UNROLLED  // this region's own (kernels/unrolled.hpp says why)

/// Rows [i0, i0 + Rows) x one panel of C: every block of K, in order.
template <std::size_t Rows>
void block_scaled_tile(const block_scaled_activations& a, std::size_t i0, const packed_block_scaled_matrix& w,
                       std::size_t panel, float* c, std::size_t ldc, std::size_t cols) {
  constexpr std::size_t width = packed_block_scaled_matrix::panel_width;
  using acc_type = policy::acc_type;
  using weights_type = policy::weights_type;
  const std::size_t k = w.rows(), block = w.block(), blocks = w.blocks(), padded_n = w.panels() * width;
  const std::uint8_t* wp = w.data().data() + panel * w.panel_bytes();
  const std::int32_t* colsums = w.column_sums().data() + panel * width;
  const float* sbs = w.scales().data() + panel * width;
  const bool four_bit = w.kind() != block_element::int8;
  const policy::decoder decoder(block_element_table(w.kind()));

  const std::uint8_t* rows[Rows];
  std::int32_t za[Rows];
  const float* sa[Rows];
  for (std::size_t r = 0; r < Rows; ++r) {
    rows[r] = a.codes + (i0 + r) * a.ld;
    za[r] = a.zero_points ? a.zero_points[i0 + r] : 0;
    sa[r] = a.scales + (i0 + r) * a.scale_row_stride;
  }
  alignas(64) float acc[Rows][width] = {};

  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t k0 = b * block, k1 = std::min(k, k0 + block);
    acc_type s[Rows];
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { s[r] = policy::zero(); });
    if (!four_bit) {
      std::size_t g = k0 / 4;
      for (; g < k1 / 4; ++g) {  // whole groups (block is a multiple of 4)
        const weights_type wv = policy::load_s8(wp + g * 64);
        unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { policy::dot(s[r], load_codes4(rows[r] + 4 * g), wv); });
      }
      if (k1 % 4) {  // the end of K
        const weights_type wv = policy::load_s8(wp + g * 64);
        unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA { policy::dot(s[r], load_codes4(rows[r] + 4 * g, k1 - 4 * g), wv); });
      }
    } else {
      std::size_t h = k0 / 8;
      for (; h < k1 / 8; ++h) {  // whole pairs of groups (block is a multiple of 8)
        weights_type lo, hi;
        policy::load_s4(decoder, wp + h * 64, lo, hi);
        unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
          policy::dot(s[r], load_codes4(rows[r] + 8 * h), lo);
          policy::dot(s[r], load_codes4(rows[r] + 8 * h + 4), hi);
        });
      }
      if (k1 % 8) {
        const std::size_t left = k1 - 8 * h;  // 1..7
        weights_type lo, hi;
        policy::load_s4(decoder, wp + h * 64, lo, hi);
        unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
          policy::dot(s[r], load_codes4(rows[r] + 8 * h, std::min<std::size_t>(left, 4)), lo);
          if (left > 4) policy::dot(s[r], load_codes4(rows[r] + 8 * h + 4, left - 4), hi);
        });
      }
    }
    const std::int32_t* colsum = colsums + b * padded_n;
    const float* sb = sbs + b * padded_n;
    unrolled<Rows>([&](auto r) XQ_INLINE_LAMBDA {
      policy::fold(s[r], za[r], colsum, sa[r][b * a.scale_block_stride], sb, acc[r]);
    });
  }
  for (std::size_t r = 0; r < Rows; ++r) std::memcpy(c + (i0 + r) * ldc, acc[r], cols * sizeof(float));
}

/// The last `rows` (< the tile's) rows: one tile of exactly that height.
template <std::size_t Rows>
void block_scaled_last_rows(std::size_t rows, const block_scaled_activations& a, std::size_t i0,
                            const packed_block_scaled_matrix& w, std::size_t panel, float* c, std::size_t ldc,
                            std::size_t cols) {
  if constexpr (Rows > 0) {
    if (rows == Rows) block_scaled_tile<Rows>(a, i0, w, panel, c, ldc, cols);
    else block_scaled_last_rows<Rows - 1>(rows, a, i0, w, panel, c, ldc, cols);
  } else {
    (void)rows, (void)a, (void)i0, (void)w, (void)panel, (void)c, (void)ldc, (void)cols;
  }
}

/// Items [t0, t1) of C: item t is row block t / panels, panel t % panels.
inline void block_scaled_gemm_items(std::size_t t0, std::size_t t1, std::size_t m,
                                    const block_scaled_activations& a, const packed_block_scaled_matrix& w,
                                    float* c) {
  constexpr std::size_t tile = policy::tile_rows, width = packed_block_scaled_matrix::panel_width;
  static_assert(block_scaled_block_rows % tile == 0, "xquant: a row block must hold whole tiles");
  const std::size_t n = w.cols(), panels = w.panels();
  for (std::size_t t = t0; t < t1; ++t) {
    const std::size_t ib = (t / panels) * block_scaled_block_rows, panel = t % panels;
    const std::size_t ie = std::min(m, ib + block_scaled_block_rows);
    const std::size_t j = panel * width, cols = std::min(width, n - j);
    float* cp = c + j;
    std::size_t i = ib;
    for (; i + tile <= ie; i += tile) block_scaled_tile<tile>(a, i, w, panel, cp, n, cols);
    block_scaled_last_rows<tile - 1>(ie - i, a, i, w, panel, cp, n, cols);
  }
}

