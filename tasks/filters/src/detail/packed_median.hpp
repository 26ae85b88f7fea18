#pragma once
// Packed 3×3 and 5×5 medians of u8/u16 images (layer 4, shared by the CUDA kernel and its CPU
// test): pixels are held two per 32-bit word in 16-bit lanes and compared with __vminu2/__vmaxu2,
// one instruction each on sm_90 (byte lanes, __vminu4, compile to about seven: cubin size of 64
// chained calls, nvcc 13). One "strip" is kPixels consecutive pixels (one 16-byte load) of
// kRows output rows; a row of a strip is held as kExt words, one extra word (2 pixels) each side.
// 3×3: median of 9 = med3(max of column minima, med3 of column medians, min of column maxima)
// (exact, Smith 1996); output rows go in pairs sharing the sorted pair of their two common rows.
// 5×5: forgetful selection (element.hpp) on the packed words; with an even number of rows per
// strip, output rows go in pairs whose 20 common elements go first and share 120 of the 168
// compare-exchanges (216 per pair instead of 336).
#include <cstdint>
#include <cstring>

#include "element.hpp"

#if defined(__CUDA_ARCH__)
#define WEFT_FILTERS_UNROLL _Pragma("unroll")
#else
#define WEFT_FILTERS_UNROLL
#endif

namespace weft::filters::device {

using Word = std::uint32_t;

WEFT_FILTERS_HD Word lane_min(Word a, Word b) {
#if defined(__CUDA_ARCH__)
  return __vminu2(a, b);
#else
  const Word lo = (a & 0xffffu) < (b & 0xffffu) ? (a & 0xffffu) : (b & 0xffffu);
  const Word hi = (a >> 16) < (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | hi << 16;
#endif
}
WEFT_FILTERS_HD Word lane_max(Word a, Word b) {
#if defined(__CUDA_ARCH__)
  return __vmaxu2(a, b);
#else
  const Word lo = (a & 0xffffu) > (b & 0xffffu) ? (a & 0xffffu) : (b & 0xffffu);
  const Word hi = (a >> 16) > (b >> 16) ? (a >> 16) : (b >> 16);
  return lo | hi << 16;
#endif
}
WEFT_FILTERS_HD Word lane_med3(Word a, Word b, Word c) { return lane_max(lane_min(a, b), lane_min(lane_max(a, b), c)); }
/// (high lane of a, low lane of b): the word one pixel to the right of a.
WEFT_FILTERS_HD Word lane_shift(Word a, Word b) { return (a >> 16) | (b << 16); }

/// Geometry of a strip of T pixels.
template <class T> struct Strip {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2, "u8 or u16");
  static constexpr int kPixels = 16 / static_cast<int>(sizeof(T));
  static constexpr int kWords = kPixels / 2;
  static constexpr int kExt = kWords + 2;
};

WEFT_FILTERS_HD void load16(const void* p, Word (&u)[4]) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(static_cast<const uint4*>(p));
  u[0] = v.x, u[1] = v.y, u[2] = v.z, u[3] = v.w;
#else
  std::memcpy(u, p, 16);
#endif
}
WEFT_FILTERS_HD void store16(void* p, const Word (&u)[4]) {
#if defined(__CUDA_ARCH__)
  *static_cast<uint4*>(p) = make_uint4(u[0], u[1], u[2], u[3]);
#else
  std::memcpy(p, u, 16);
#endif
}
/// Bytes 0, 1 (lo) or 2, 3 (hi) of v as two 16-bit lanes, and back.
WEFT_FILTERS_HD Word bytes_lo(Word v) { return (v & 0xffu) | (v & 0xff00u) << 8; }
WEFT_FILTERS_HD Word bytes_hi(Word v) { return (v >> 16 & 0xffu) | (v & 0xff000000u) >> 8; }
WEFT_FILTERS_HD Word bytes_pack(Word lo, Word hi) {
  return (lo & 0xffu) | (lo >> 8 & 0xff00u) | (hi & 0xffu) << 16 | (hi & 0xff0000u) << 8;
}

/// p[0] | p[1] << 16 for a p aligned to two elements.
template <class T> WEFT_FILTERS_HD Word load_pair(const T* p) {
  if constexpr (sizeof(T) == 1) {
    std::uint16_t v;
#if defined(__CUDA_ARCH__)
    v = __ldg(reinterpret_cast<const unsigned short*>(p));
#else
    std::memcpy(&v, p, 2);
#endif
    return bytes_lo(v);
  } else {
    Word v;
#if defined(__CUDA_ARCH__)
    v = __ldg(reinterpret_cast<const unsigned int*>(p));
#else
    std::memcpy(&v, p, 4);
#endif
    return v;
  }
}

/// Row y (border applied) of the strip at x0: ext[k] holds pixels x0 − 2 + 2k, x0 − 1 + 2k.
/// `fast`: the 16-byte load at x0 is aligned and x0 − 2 .. x0 + kPixels + 1 lie inside the row.
template <class T>
WEFT_FILTERS_HD void load_strip_row(Word (&ext)[Strip<T>::kExt], const T* __restrict__ src, Extent e, long long z,
                                    long long y, long long x0, int border, bool fast) {
  using S = Strip<T>;
  const long long yi = border_index(y, e.ny, border);
  if (yi < 0) {
    WEFT_FILTERS_UNROLL
    for (int k = 0; k < S::kExt; ++k) ext[k] = 0;
    return;
  }
  const T* row = src + (z * e.ny + yi) * e.nx;
  if (fast) {
    Word u[4];
    load16(row + x0, u);
    WEFT_FILTERS_UNROLL
    for (int q = 0; q < 4; ++q) {
      if constexpr (sizeof(T) == 1) {
        ext[1 + 2 * q] = bytes_lo(u[q]);
        ext[2 + 2 * q] = bytes_hi(u[q]);
      } else {
        ext[1 + q] = u[q];
      }
    }
    ext[0] = load_pair(row + x0 - 2);
    ext[S::kExt - 1] = load_pair(row + x0 + S::kPixels);
    return;
  }
  WEFT_FILTERS_UNROLL
  for (int k = 0; k < S::kExt; ++k) {
    Word w = 0;
    WEFT_FILTERS_UNROLL
    for (int h = 0; h < 2; ++h) {
      const long long xi = border_index(x0 - 2 + 2 * k + h, e.nx, border);
      w |= (xi < 0 ? Word(0) : Word(row[xi])) << (16 * h);
    }
    ext[k] = w;
  }
}

/// Writes the kWords output words of row y (skipped outside the image); `fast`: aligned, all inside.
template <class T>
WEFT_FILTERS_HD void store_strip_row(T* __restrict__ dst, const Word (&out)[Strip<T>::kWords], Extent e, long long z,
                                     long long y, long long x0, bool fast) {
  using S = Strip<T>;
  if (y >= e.ny) return;
  T* row = dst + (z * e.ny + y) * e.nx;
  if (fast) {
    Word u[4];
    WEFT_FILTERS_UNROLL
    for (int q = 0; q < 4; ++q) {
      if constexpr (sizeof(T) == 1) u[q] = bytes_pack(out[2 * q], out[2 * q + 1]);
      else u[q] = out[q];
    }
    store16(row + x0, u);
    return;
  }
  WEFT_FILTERS_UNROLL
  for (int p = 0; p < S::kPixels; ++p)
    if (x0 + p < e.nx) row[x0 + p] = static_cast<T>(out[p / 2] >> (16 * (p % 2)) & 0xffffu);
}

/// 3×3 from sorted columns (lo ≤ mid ≤ hi per lane) of one output row.
template <int kExt>
WEFT_FILTERS_HD void median3_from_columns(const Word (&lo)[kExt], const Word (&mid)[kExt], const Word (&hi)[kExt],
                                          Word (&out)[kExt - 2]) {
  WEFT_FILTERS_UNROLL
  for (int k = 0; k < kExt - 2; ++k) {
    const Word a = lane_max(lane_max(lane_shift(lo[k], lo[k + 1]), lo[k + 1]), lane_shift(lo[k + 1], lo[k + 2]));
    const Word b = lane_med3(lane_shift(mid[k], mid[k + 1]), mid[k + 1], lane_shift(mid[k + 1], mid[k + 2]));
    const Word c = lane_min(lane_min(lane_shift(hi[k], hi[k + 1]), hi[k + 1]), lane_shift(hi[k + 1], hi[k + 2]));
    out[k] = lane_med3(a, b, c);
  }
}

/// Sorted column of (the sorted pair lo ≤ hi) and t.
WEFT_FILTERS_HD void sort_with_pair(Word lo, Word hi, Word t, Word& s_lo, Word& s_mid, Word& s_hi) {
  s_lo = lane_min(lo, t);
  s_hi = lane_max(hi, t);
  s_mid = lane_max(lo, lane_min(hi, t));
}

/// The forgetful selection of element.hpp on packed words.
template <int N> WEFT_FILTERS_HD Word packed_forgetful_median(Word (&v)[N]) {
  constexpr int m = N / 2;
  constexpr int hi = m + 1;
  WEFT_FILTERS_UNROLL
  for (int lo = 0; lo <= m - 1; ++lo) {
    WEFT_FILTERS_UNROLL
    for (int i = lo + 1; i <= hi; ++i) {
      const Word a = v[lo];
      v[lo] = lane_min(a, v[i]);
      v[i] = lane_max(a, v[i]);
    }
    WEFT_FILTERS_UNROLL
    for (int i = lo + 1; i < hi; ++i) {
      const Word a = v[i];
      v[i] = lane_min(a, v[hi]);
      v[hi] = lane_max(a, v[hi]);
    }
    if (lo < m - 1) v[hi] = v[hi + 1 + lo];
  }
  return v[m];
}

/// Rounds [kFirst, kLast) of packed_forgetful_median<25> (m = 12): the round lo takes element
/// 14 + lo at its end. Two vertically neighbouring 5×5 windows share 20 elements (their 4 common
/// rows): put first, rounds 0..5 (120 of the 168 compare-exchanges) are common to both.
template <int kFirst, int kLast> WEFT_FILTERS_HD void forgetful_rounds_25(Word (&v)[25]) {
  constexpr int m = 12;
  constexpr int hi = m + 1;
  WEFT_FILTERS_UNROLL
  for (int lo = kFirst; lo < kLast; ++lo) {
    WEFT_FILTERS_UNROLL
    for (int i = lo + 1; i <= hi; ++i) {
      const Word a = v[lo];
      v[lo] = lane_min(a, v[i]);
      v[i] = lane_max(a, v[i]);
    }
    WEFT_FILTERS_UNROLL
    for (int i = lo + 1; i < hi; ++i) {
      const Word a = v[i];
      v[i] = lane_min(a, v[hi]);
      v[hi] = lane_max(a, v[hi]);
    }
    if (lo < m - 1) v[hi] = v[hi + 1 + lo];
  }
}

/// The five words of row `r` around word k (pixels 2k − 2 .. 2k + 3 of the extended row).
template <int kExt> WEFT_FILTERS_HD void window_row(const Word (&r)[kExt], int k, Word* v) {
  v[0] = r[k];
  v[1] = lane_shift(r[k], r[k + 1]);
  v[2] = r[k + 1];
  v[3] = lane_shift(r[k + 1], r[k + 2]);
  v[4] = r[k + 2];
}

/// median_strip with the load path fixed at compile time, so that the loads of all rows of the
/// vector path can be issued before the first use.
template <class T, int K, int kRows, bool fast_load>
WEFT_FILTERS_HD void median_strip_path(const T* __restrict__ src, T* __restrict__ dst, Extent e, int border, long long z,
                                       long long y0, long long x0, bool fast_store) {
  static_assert(K == 3 || K == 5, "packed medians: 3×3 or 5×5");
  static_assert(kRows % 2 == 0 || K == 5, "3×3 rows go in pairs");
  using S = Strip<T>;
  constexpr int kExt = S::kExt;
  Word out[S::kWords];
  if constexpr (K == 3) {
    Word above[kExt], a[kExt], b[kExt], below[kExt];
    load_strip_row<T>(above, src, e, z, y0 - 1, x0, border, fast_load);
    load_strip_row<T>(a, src, e, z, y0, x0, border, fast_load);
    WEFT_FILTERS_UNROLL
    for (int q = 0; q < kRows; q += 2) {
      const long long y = y0 + q;
      load_strip_row<T>(b, src, e, z, y + 1, x0, border, fast_load);
      load_strip_row<T>(below, src, e, z, y + 2, x0, border, fast_load);
      Word p_lo[kExt], p_hi[kExt], lo[kExt], mid[kExt], hi[kExt];
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) {  // rows y, y + 1 sorted once for both outputs
        p_lo[k] = lane_min(a[k], b[k]);
        p_hi[k] = lane_max(a[k], b[k]);
        sort_with_pair(p_lo[k], p_hi[k], above[k], lo[k], mid[k], hi[k]);
      }
      median3_from_columns(lo, mid, hi, out);
      store_strip_row<T>(dst, out, e, z, y, x0, fast_store);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) sort_with_pair(p_lo[k], p_hi[k], below[k], lo[k], mid[k], hi[k]);
      median3_from_columns(lo, mid, hi, out);
      store_strip_row<T>(dst, out, e, z, y + 1, x0, fast_store);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) {  // the next pair is rows y + 2, y + 3 under row y + 1
        above[k] = b[k];
        a[k] = below[k];
      }
    }
  } else if constexpr (kRows % 2 == 0) {  // 5×5, output rows in pairs sharing 20 elements
    Word r0[kExt], r1[kExt], r2[kExt], r3[kExt], r4[kExt], r5[kExt];
    load_strip_row<T>(r0, src, e, z, y0 - 2, x0, border, fast_load);
    load_strip_row<T>(r1, src, e, z, y0 - 1, x0, border, fast_load);
    load_strip_row<T>(r2, src, e, z, y0, x0, border, fast_load);
    load_strip_row<T>(r3, src, e, z, y0 + 1, x0, border, fast_load);
    Word out2[S::kWords];
    WEFT_FILTERS_UNROLL
    for (int q = 0; q < kRows; q += 2) {
      load_strip_row<T>(r4, src, e, z, y0 + q + 2, x0, border, fast_load);
      load_strip_row<T>(r5, src, e, z, y0 + q + 3, x0, border, fast_load);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < S::kWords; ++k) {
        Word shared[25], below[25];  // rows y − 1 .. y + 2, then row y − 2 (or y + 3)
        window_row(r1, k, shared);
        window_row(r2, k, shared + 5);
        window_row(r3, k, shared + 10);
        window_row(r4, k, shared + 15);
        forgetful_rounds_25<0, 6>(shared);
        WEFT_FILTERS_UNROLL
        for (int i = 0; i < 14; ++i) below[i] = shared[i];  // the state after round 5
        window_row(r0, k, shared + 20);
        window_row(r5, k, below + 20);
        forgetful_rounds_25<6, 12>(shared);
        forgetful_rounds_25<6, 12>(below);
        out[k] = shared[12];
        out2[k] = below[12];
      }
      store_strip_row<T>(dst, out, e, z, y0 + q, x0, fast_store);
      store_strip_row<T>(dst, out2, e, z, y0 + q + 1, x0, fast_store);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) {
        r0[k] = r2[k];
        r1[k] = r3[k];
        r2[k] = r4[k];
        r3[k] = r5[k];
      }
    }
  } else {
    Word r0[kExt], r1[kExt], r2[kExt], r3[kExt], r4[kExt];  // named: a 2D array went to local memory
    load_strip_row<T>(r0, src, e, z, y0 - 2, x0, border, fast_load);
    load_strip_row<T>(r1, src, e, z, y0 - 1, x0, border, fast_load);
    load_strip_row<T>(r2, src, e, z, y0, x0, border, fast_load);
    load_strip_row<T>(r3, src, e, z, y0 + 1, x0, border, fast_load);
    WEFT_FILTERS_UNROLL
    for (int q = 0; q < kRows; ++q) {
      load_strip_row<T>(r4, src, e, z, y0 + q + 2, x0, border, fast_load);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < S::kWords; ++k) {
        Word v[25];
        const Word* rows[5] = {r0, r1, r2, r3, r4};
        WEFT_FILTERS_UNROLL
        for (int i = 0; i < 5; ++i) {
          v[i * 5 + 0] = rows[i][k];
          v[i * 5 + 1] = lane_shift(rows[i][k], rows[i][k + 1]);
          v[i * 5 + 2] = rows[i][k + 1];
          v[i * 5 + 3] = lane_shift(rows[i][k + 1], rows[i][k + 2]);
          v[i * 5 + 4] = rows[i][k + 2];
        }
        out[k] = packed_forgetful_median(v);
      }
      store_strip_row<T>(dst, out, e, z, y0 + q, x0, fast_store);
      WEFT_FILTERS_UNROLL
      for (int k = 0; k < kExt; ++k) {
        r0[k] = r1[k];
        r1[k] = r2[k];
        r2[k] = r3[k];
        r3[k] = r4[k];
      }
    }
  }
}

/// One strip: kRows output rows from y0, pixels x0 .. x0 + kPixels − 1 of slice z, K = 3 or 5.
/// `aligned`: src, dst and every row start are 16-byte aligned.
template <class T, int K, int kRows>
WEFT_FILTERS_HD void median_strip(const T* __restrict__ src, T* __restrict__ dst, Extent e, int border, long long z,
                                  long long y0, long long x0, bool aligned) {
  const bool fast_store = aligned && x0 + Strip<T>::kPixels <= e.nx;
  if (aligned && x0 >= 2 && x0 + Strip<T>::kPixels + 2 <= e.nx)
    median_strip_path<T, K, kRows, true>(src, dst, e, border, z, y0, x0, fast_store);
  else
    median_strip_path<T, K, kRows, false>(src, dst, e, border, z, y0, x0, fast_store);
}

}  // namespace weft::filters::device
