#pragma once
// Double-precision reference of each static-pathway stage, written from the documented formulas
// (Marat et al. 2009 and bank.hpp's table) with full complex FFTs (FFTW, double), independently
// of the float CPU path and of the CUDA kernels.
#include <complex>
#include <cstdint>
#include <vector>

namespace weft::saliency::reference {

struct Plane {
  std::int64_t h = 0, w = 0;
  std::vector<double> v;  // row-major
};

/// Grey levels already scaled to [0, 1], [h, w] → Hann-windowed, zero-padded to even width, full
/// complex spectrum [h, wf] (forward FFT).
std::vector<std::complex<double>> retina(const Plane& grey, std::int64_t& wf);
/// Half spectrum [h, wf/2+1] (as produced by the pathway) → real responses of map (o, b) [h, wf],
/// by extending the spectrum to the full plane (Hermitian) and a complex inverse FFT.
Plane gabor(const std::vector<std::complex<double>>& half, std::int64_t h, std::int64_t wf, int o, int b);
/// 24 responses → 24 interacted energies, and their (min, max, m̄ = mean of the 32×32 tile maxima
/// other than the largest).
std::vector<Plane> interactions(const std::vector<Plane>& responses, std::vector<double>& stats);
/// 24 interacted maps + stats → static map.
Plane normalize(const std::vector<Plane>& maps, const std::vector<double>& stats);

}  // namespace weft::saliency::reference
