#pragma once
// Interleaved 3×3 median strips of u8/u16 images (layer 4, shared by the CUDA kernel and its CPU
// test). A strip is the kPixels = 16 / sizeof(T) pixels of one 16-byte load; unlike
// packed_median.hpp, word j of a row holds pixels j and j + kHalf (kHalf = kPixels / 2) in its two
// 16-bit lanes, so the horizontal neighbours of word j are words j − 1 and j + 1: no lane shifts
// (27 of the ~140 operations per strip row there). Each unpacked word costs one byte permutation
// (two for the fp16 keys), each output word one.
//
// Keys: u16 pixels are their own 16-bit keys. u8 pixels sit in the HIGH byte of their lane and the
// low byte is whatever the permutation leaves there: keys of different pixels order as the pixels
// do, and a min/max network returns one of its input keys, so the high byte of the selected key is
// the selected pixel. The fp16 variant (kHalfKeys) stores u8 pixels as the fp16 numbers 1024 + v
// (bits 0x6400 | v, exact and ordered like v) and compares with min/max.f16x2 (HMNMX2), which may
// issue on another pipe than the integer DPX min/max; which is faster is measured (filters.json).
//
// Median of 9 = med3(max of column minima, med3 of column medians, min of column maxima) (Smith
// 1996); output rows go in pairs sharing the sorted pair of their two common rows; the med3 of
// three neighbouring column medians is the max of its three pairwise minima, of which the two
// between adjacent columns are shared with the neighbouring outputs. About 9 lane operations
// per pixel (bench/filters/NOTES.md). The aligned strips can compute the medians of three as
// a + b + c − max3 − min3 in wrapping word sums (FmaSums, kSumMedians / kSumColumns), which issue
// as IMAD on the FMA pipe beside the integer pipe that bounds the network.
#include <cstdint>
#include <cstring>

#include "packed_median.hpp"

namespace weft::filters::device {

/// __byte_perm: result byte n is byte s_n of (y:x) (x bytes 0..3, y bytes 4..7).
WEFT_FILTERS_HD Word byte_perm(Word x, Word y, unsigned s) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(x, y, s);
#else
  const std::uint64_t v = static_cast<std::uint64_t>(y) << 32 | x;
  Word r = 0;
  for (int n = 0; n < 4; ++n) r |= static_cast<Word>(v >> (8 * (s >> (4 * n) & 7u)) & 0xffu) << (8 * n);
  return r;
#endif
}

/// Selector of byte_perm from the four source byte indices of result bytes 0..3.
constexpr unsigned perm(unsigned b0, unsigned b1, unsigned b2, unsigned b3) { return b0 | b1 << 4 | b2 << 8 | b3 << 12; }

/// Two-lane minimum and maximum of 16-bit integer keys (sm_90 DPX: three-input forms too).
struct DpxLanes {
  WEFT_FILTERS_HD static Word min(Word a, Word b) { return lane_min(a, b); }
  WEFT_FILTERS_HD static Word max(Word a, Word b) { return lane_max(a, b); }
  WEFT_FILTERS_HD static Word min3(Word a, Word b, Word c) {
#if defined(__CUDA_ARCH__)
    return __vimin3_u16x2(a, b, c);
#else
    return lane_min(lane_min(a, b), c);
#endif
  }
  WEFT_FILTERS_HD static Word max3(Word a, Word b, Word c) {
#if defined(__CUDA_ARCH__)
    return __vimax3_u16x2(a, b, c);
#else
    return lane_max(lane_max(a, b), c);
#endif
  }
};

/// The same on positive finite fp16 keys with min/max.f16x2 (on the host: their bit patterns
/// order as their values, so the integer lanes give the same result).
struct HalfLanes {
  WEFT_FILTERS_HD static Word min(Word a, Word b) {
#if defined(__CUDA_ARCH__)
    Word r;
    asm("min.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return lane_min(a, b);
#endif
  }
  WEFT_FILTERS_HD static Word max(Word a, Word b) {
#if defined(__CUDA_ARCH__)
    Word r;
    asm("max.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return lane_max(a, b);
#endif
  }
  WEFT_FILTERS_HD static Word min3(Word a, Word b, Word c) { return min(min(a, b), c); }
  WEFT_FILTERS_HD static Word max3(Word a, Word b, Word c) { return max(max(a, b), c); }
};

/// Key encoding of an interleaved strip of T (u8: high-byte or fp16 keys; u16: identity).
template <class T, bool kHalfKeys> struct InterleavedKeys {
  static_assert(sizeof(T) == 1 || (sizeof(T) == 2 && !kHalfKeys), "fp16 keys hold u8 pixels only");
  using Lanes = std::conditional_t<kHalfKeys, HalfLanes, DpxLanes>;
  static constexpr int kPixels = 16 / static_cast<int>(sizeof(T));
  static constexpr int kHalf = kPixels / 2;  // words per row
  static constexpr int kExt = kHalf + 2;     // with the left (j = −1) and right (j = kHalf) words

  WEFT_FILTERS_HD static Word encode(Word v) {
    if constexpr (sizeof(T) == 2) return v;
    else if constexpr (kHalfKeys) return 0x6400u | v;
    else return v << 8 | v;  // the low byte a copy, as the fast path leaves it
  }
  WEFT_FILTERS_HD static T decode(Word lane) {
    if constexpr (sizeof(T) == 2) return static_cast<T>(lane);
    else if constexpr (kHalfKeys) return static_cast<T>(lane & 0xffu);
    else return static_cast<T>(lane >> 8 & 0xffu);
  }
  /// Word j of a row from the 16 bytes u, the pixel left of the strip (low element of `left`) and
  /// the pixel right of it (low element of `right`).
  WEFT_FILTERS_HD static void unpack(const Word (&u)[4], Word left, Word right, Word (&ext)[kExt]) {
    if constexpr (sizeof(T) == 2) {  // word j = (p[j], p[j + 4]); u[q] = (p[2q], p[2q + 1])
      ext[0] = byte_perm(left, u[1], perm(0, 1, 6, 7));
      WEFT_FILTERS_UNROLL
      for (int j = 0; j < 4; ++j)
        ext[1 + j] = byte_perm(u[j / 2], u[2 + j / 2], j % 2 == 0 ? perm(0, 1, 4, 5) : perm(2, 3, 6, 7));
      ext[5] = byte_perm(u[2], right, perm(0, 1, 4, 5));
    } else if constexpr (kHalfKeys) {  // pixel in the low byte, 0x64 above
      ext[0] = (byte_perm(left, u[1], perm(0, 0, 7, 7)) & 0x00ff00ffu) | 0x64006400u;
      WEFT_FILTERS_UNROLL
      for (int j = 0; j < 8; ++j)
        ext[1 + j] = (byte_perm(u[j / 4], u[2 + j / 4], perm(j % 4, j % 4, 4 + j % 4, 4 + j % 4)) & 0x00ff00ffu) |
                     0x64006400u;
      ext[9] = (byte_perm(u[2], right, perm(0, 0, 4, 4)) & 0x00ff00ffu) | 0x64006400u;
    } else {  // pixel in the high byte, the low byte a copy of it
      ext[0] = byte_perm(left, u[1], perm(0, 0, 7, 7));
      WEFT_FILTERS_UNROLL
      for (int j = 0; j < 8; ++j)
        ext[1 + j] = byte_perm(u[j / 4], u[2 + j / 4], perm(j % 4, j % 4, 4 + j % 4, 4 + j % 4));
      ext[9] = byte_perm(u[2], right, perm(0, 0, 4, 4));
    }
  }
  /// The 16 output bytes from the kHalf output words.
  WEFT_FILTERS_HD static void pack(const Word (&o)[kHalf], Word (&u)[4]) {
    if constexpr (sizeof(T) == 2) {  // o[j] = (q[j], q[j + 4])
      u[0] = byte_perm(o[0], o[1], perm(0, 1, 4, 5));
      u[1] = byte_perm(o[2], o[3], perm(0, 1, 4, 5));
      u[2] = byte_perm(o[0], o[1], perm(2, 3, 6, 7));
      u[3] = byte_perm(o[2], o[3], perm(2, 3, 6, 7));
    } else {  // o[j] = (q[j], q[j + 8]) in byte 1, 3 (or 0, 2 for fp16 keys)
      constexpr unsigned s = kHalfKeys ? perm(0, 4, 2, 6) : perm(1, 5, 3, 7);
      const Word t01 = byte_perm(o[0], o[1], s), t23 = byte_perm(o[2], o[3], s);  // (q0 q1 q8 q9), (q2 q3 q10 q11)
      const Word t45 = byte_perm(o[4], o[5], s), t67 = byte_perm(o[6], o[7], s);
      u[0] = byte_perm(t01, t23, perm(0, 1, 4, 5));
      u[1] = byte_perm(t45, t67, perm(0, 1, 4, 5));
      u[2] = byte_perm(t01, t23, perm(2, 3, 6, 7));
      u[3] = byte_perm(t45, t67, perm(2, 3, 6, 7));
    }
  }
};

/// Row y (border applied) of the strip at x0 as keys: ext[k] holds pixels x0 − 1 + k and
/// x0 − 1 + k + kHalf. kFast: the 16-byte load at x0 is aligned and x0 − 1 .. x0 + kPixels lie inside.
template <class T, bool kHalfKeys, bool kFast>
WEFT_FILTERS_HD void load_keys(Word (&ext)[InterleavedKeys<T, kHalfKeys>::kExt], const T* __restrict__ src, Extent e,
                               long long z, long long y, long long x0, int border) {
  using K = InterleavedKeys<T, kHalfKeys>;
  const long long yi = border_index(y, e.ny, border);
  if (yi < 0) {
    WEFT_FILTERS_UNROLL
    for (int k = 0; k < K::kExt; ++k) ext[k] = K::encode(0) | K::encode(0) << 16;
    return;
  }
  const T* row = src + (z * e.ny + yi) * e.nx;
  if constexpr (kFast) {
    Word u[4];
    load16(row + x0, u);
    T l, r;
#if defined(__CUDA_ARCH__)
    l = __ldg(row + x0 - 1);
    r = __ldg(row + x0 + K::kPixels);
#else
    l = row[x0 - 1];
    r = row[x0 + K::kPixels];
#endif
    K::unpack(u, Word(l), Word(r), ext);
  } else {
    WEFT_FILTERS_UNROLL
    for (int k = 0; k < K::kExt; ++k) {
      Word w = 0;
      WEFT_FILTERS_UNROLL
      for (int h = 0; h < 2; ++h) {
        const long long xi = border_index(x0 - 1 + k + h * K::kHalf, e.nx, border);
        w |= K::encode(xi < 0 ? Word(0) : Word(row[xi])) << (16 * h);
      }
      ext[k] = w;
    }
  }
}

/// Writes row y's output words (skipped outside the image); `fast`: aligned and all inside.
template <class T, bool kHalfKeys>
WEFT_FILTERS_HD void store_keys(T* __restrict__ dst, const Word (&o)[InterleavedKeys<T, kHalfKeys>::kHalf], Extent e,
                                long long z, long long y, long long x0, bool fast) {
  using K = InterleavedKeys<T, kHalfKeys>;
  if (y >= e.ny) return;
  T* row = dst + (z * e.ny + y) * e.nx;
  if (fast) {
    Word u[4];
    K::pack(o, u);
    store16(row + x0, u);
    return;
  }
  WEFT_FILTERS_UNROLL
  for (int p = 0; p < K::kPixels; ++p)
    if (x0 + p < e.nx) row[x0 + p] = K::decode(o[p % K::kHalf] >> (16 * (p / K::kHalf)) & 0xffffu);
}

/// Sums of packed keys, wrapping mod 2³²: a sum of whole words is the word of the lanes' sums
/// (Σ 2¹⁶ᵏ · lane_k is linear), so a lane-wise expression that ends in [0, 2¹⁶) per lane, such as
/// med3(a, b, c) = a + b + c − max3 − min3, is exact whatever the intermediate words carry. On the
/// device each is one IMAD (b · 1 + a, b · (2³² − 1) + a) whose unit is read from the constant bank,
/// so that ptxas cannot fold it into an IADD3: IMAD issues on the FMA pipe, beside the ALU pipe's
/// integer min/max and byte permutes that bound the network (bench/filters/NOTES.md).
#if defined(__CUDACC__)
static __constant__ Word kFmaUnits[2] = {1u, 0xffffffffu};
#endif
struct FmaSums {
  WEFT_FILTERS_HD static Word add(Word a, Word b) { return mad(b, 0, a); }
  WEFT_FILTERS_HD static Word sub(Word a, Word b) { return mad(b, 1, a); }

 private:
  /// b · unit + a (mod 2³²), unit = 1 (0) or 2³² − 1 (1).
  WEFT_FILTERS_HD static Word mad(Word b, int unit, Word a) {
#if defined(__CUDA_ARCH__)
    Word r;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(b), "r"(kFmaUnits[unit]), "r"(a));
    return r;
#else
    return b * (unit == 0 ? 1u : 0xffffffffu) + a;
#endif
  }
};

/// One output row from the sorted pair (p_lo ≤ p_hi) of two of its rows, their sum p_sum (read
/// with kSumColumns only) and its third row t.
template <class L, int kExt, int kSums = kNoSums>
WEFT_FILTERS_HD void median3_row(const Word (&p_lo)[kExt], const Word (&p_hi)[kExt], const Word (&p_sum)[kExt],
                                 const Word (&t)[kExt], Word (&out)[kExt - 2]) {
  using S = FmaSums;
  Word lo[kExt], mid[kExt], hi[kExt], d1[kExt - 1];
  WEFT_FILTERS_UNROLL
  for (int k = 0; k < kExt; ++k) {  // the sorted column (lo ≤ mid ≤ hi) of word k
    lo[k] = L::min(p_lo[k], t[k]);
    hi[k] = L::max(p_hi[k], t[k]);
    if constexpr (kSums >= kSumColumns) mid[k] = S::sub(S::sub(S::add(p_sum[k], t[k]), lo[k]), hi[k]);
    else mid[k] = L::max(p_lo[k], L::min(p_hi[k], t[k]));
  }
  WEFT_FILTERS_UNROLL
  for (int k = 0; k + 1 < kExt; ++k)
    d1[k] = kSums >= kSumMedians ? S::add(mid[k], mid[k + 1]) : L::min(mid[k], mid[k + 1]);
  WEFT_FILTERS_UNROLL
  for (int k = 0; k < kExt - 2; ++k) {
    const Word a = L::max3(lo[k], lo[k + 1], lo[k + 2]);
    const Word c = L::min3(hi[k], hi[k + 1], hi[k + 2]);
    if constexpr (kSums >= kSumMedians) {  // d1: sums of adjacent medians
      const Word b = S::sub(S::sub(S::add(d1[k], mid[k + 2]), L::max3(mid[k], mid[k + 1], mid[k + 2])),
                            L::min3(mid[k], mid[k + 1], mid[k + 2]));
      out[k] = S::sub(S::sub(S::add(S::add(a, b), c), L::max3(a, b, c)), L::min3(a, b, c));
    } else {  // d1: minima of adjacent medians; med3 = max of the pairwise minima
      const Word b = L::max3(d1[k], d1[k + 1], L::min(mid[k], mid[k + 2]));
      out[k] = L::max(L::min(a, b), L::min(L::max(a, b), c));
    }
  }
}

/// kRows output rows from y0 of the strip at x0 (slice z), loads fixed at compile time.
template <class T, bool kHalfKeys, int kRows, bool kFast>
WEFT_FILTERS_HD void median3_interleaved_path(const T* __restrict__ src, T* __restrict__ dst, Extent e, int border,
                                              long long z, long long y0, long long x0, bool fast_store) {
  using K = InterleavedKeys<T, kHalfKeys>;
  using L = typename K::Lanes;
  constexpr int kExt = K::kExt;
  Word above[kExt], a[kExt], b[kExt], below[kExt], p_lo[kExt], p_hi[kExt], out[K::kHalf];
  load_keys<T, kHalfKeys, kFast>(above, src, e, z, y0 - 1, x0, border);
  load_keys<T, kHalfKeys, kFast>(a, src, e, z, y0, x0, border);
  WEFT_FILTERS_UNROLL
  for (int q = 0; q < kRows; q += 2) {
    const long long y = y0 + q;
    load_keys<T, kHalfKeys, kFast>(b, src, e, z, y + 1, x0, border);
    if (q + 1 < kRows) load_keys<T, kHalfKeys, kFast>(below, src, e, z, y + 2, x0, border);
    WEFT_FILTERS_UNROLL
    for (int k = 0; k < kExt; ++k) {  // rows y, y + 1 sorted once for both outputs
      p_lo[k] = L::min(a[k], b[k]);
      p_hi[k] = L::max(a[k], b[k]);
    }
    median3_row<L>(p_lo, p_hi, p_lo, above, out);
    store_keys<T, kHalfKeys>(dst, out, e, z, y, x0, fast_store);
    if (q + 1 < kRows) {
      median3_row<L>(p_lo, p_hi, p_lo, below, out);
      store_keys<T, kHalfKeys>(dst, out, e, z, y + 1, x0, fast_store);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) {  // the next pair is rows y + 2, y + 3 under row y + 1
        above[k] = b[k];
        a[k] = below[k];
      }
    }
  }
}

/// One interleaved strip: kRows output rows from y0, pixels x0 .. x0 + kPixels − 1 of slice z.
/// `aligned`: src, dst and every row start are 16-byte aligned.
template <class T, bool kHalfKeys, int kRows>
WEFT_FILTERS_HD void median3_interleaved_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e, int border,
                                               long long z, long long y0, long long x0, bool aligned) {
  constexpr int kPixels = InterleavedKeys<T, kHalfKeys>::kPixels;
  const bool fast_store = aligned && x0 + kPixels <= e.nx;
  if (aligned && x0 >= 1 && x0 + kPixels + 1 <= e.nx)
    median3_interleaved_path<T, kHalfKeys, kRows, true>(src, dst, e, border, z, y0, x0, fast_store);
  else
    median3_interleaved_path<T, kHalfKeys, kRows, false>(src, dst, e, border, z, y0, x0, fast_store);
}

/// kRows output rows from y0 of the aligned strip at x0 of one plane (nx, ny: the plane's size).
/// Images whose rows are whole 16-byte vectors (nx · sizeof(T) a multiple of 16, aligned rows)
/// and whose planes hold fewer than 2³¹ pixels and at least 2 rows, with a clamp
/// or mirror border (a zero border takes median3_interleaved_strip): the same network, with 32-bit
/// offsets, rows and side pixels mapped by min/max and selects, and the kRows + 2 row loads with no
/// branch between them, so that they are in flight together. kRows even. On an H100 the generic
/// strip's 64-bit offsets and branchy borders cost 3× the instructions; branches between the loads,
/// or 10-20 % more registers (a block less per SM), cost 8-15 % at 8192² (bench/filters/NOTES.md).
template <class T, int kRows, int kBorder, int kSums = kNoSums>  // kBorder: kClamp or kMirror
WEFT_FILTERS_HD void median3_aligned_rows(const T* __restrict__ plane, T* __restrict__ out, int nx, int ny, int y0,
                                          int x0) {
  static_assert(kRows % 2 == 0, "output rows go in pairs");
  static_assert(kBorder == kClamp || kBorder == kMirror, "a zero border takes median3_interleaved_strip");
  using K = InterleavedKeys<T, false>;
  using L = DpxLanes;
  constexpr int kExt = K::kExt;
  [[maybe_unused]] const bool inner = x0 >= 1 && x0 + K::kPixels < nx;  // device loads only
  const int xl = near_index(x0 - 1, nx, kBorder), xr = near_index(x0 + K::kPixels, nx, kBorder);
  Word rows[kRows + 2][kExt];
  WEFT_FILTERS_UNROLL
  for (int q = 0; q < kRows + 2; ++q) {  // rows past ny feed no stored output: any row inside will do
    const int y = near_index(y0 - 1 + q < ny ? y0 - 1 + q : ny, ny, kBorder);
    const T* at = plane + (y * nx + x0);  // the side pixels at fixed offsets from it in inner strips
    Word u[4];
    load16(at, u);
#if defined(__CUDA_ARCH__)
    const Word l = inner ? __ldg(at - 1) : __ldg(at + (xl - x0));
    const Word r = inner ? __ldg(at + K::kPixels) : __ldg(at + (xr - x0));
#else
    const Word l = at[xl - x0], r = at[xr - x0];
#endif
    K::unpack(u, l, r, rows[q]);
  }
  WEFT_FILTERS_UNROLL
  for (int q = 0; q < kRows; q += 2) {
    Word p_lo[kExt], p_hi[kExt], p_sum[kExt], o[K::kHalf], v[4];
    WEFT_FILTERS_UNROLL
    for (int k = 0; k < kExt; ++k) {  // rows y, y + 1 sorted once for both outputs
      p_lo[k] = L::min(rows[q + 1][k], rows[q + 2][k]);
      p_hi[k] = L::max(rows[q + 1][k], rows[q + 2][k]);
      if constexpr (kSums >= kSumColumns) p_sum[k] = FmaSums::add(rows[q + 1][k], rows[q + 2][k]);
    }
    median3_row<L, kExt, kSums>(p_lo, p_hi, p_sum, rows[q], o);
    if (y0 + q < ny) {
      K::pack(o, v);
      store16(out + ((y0 + q) * nx + x0), v);
    }
    median3_row<L, kExt, kSums>(p_lo, p_hi, p_sum, rows[q + 3], o);
    if (y0 + q + 1 < ny) {
      K::pack(o, v);
      store16(out + ((y0 + q + 1) * nx + x0), v);
    }
  }
}

/// median3_aligned_rows in the form of the other strips (slice z of an Extent; for the host test).
template <class T, int kRows, int kSums = kNoSums>
WEFT_FILTERS_HD void median3_aligned_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e, int border,
                                           long long z, long long y0, long long x0, bool /*aligned*/) {
  const long long plane = z * e.ny * e.nx;
  const int nx = static_cast<int>(e.nx), ny = static_cast<int>(e.ny);
  if (border == kMirror)
    median3_aligned_rows<T, kRows, kMirror, kSums>(src + plane, dst + plane, nx, ny, static_cast<int>(y0), static_cast<int>(x0));
  else
    median3_aligned_rows<T, kRows, kClamp, kSums>(src + plane, dst + plane, nx, ny, static_cast<int>(y0), static_cast<int>(x0));
}

}  // namespace weft::filters::device
