// Llama 3 RoPE frequency factors — see rope_factors.h.
#include "reference/model/rope_factors.h"

#include "numerics/numerics.h"

namespace oracle {

std::vector<float> llama3_rope_factors(double theta, int head_dim, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context) {
  constexpr double kTwoPi = 6.283185307179586476925;
  const double low_wavelen = original_context / low_freq_factor;
  const double high_wavelen = original_context / high_freq_factor;
  std::vector<float> ff;  // (head_dim / 2)
  for (int i = 0; i < head_dim / 2; i++) {
    const double freq = num::exp_d(-((double)(2 * i) / (double)head_dim) * num::log_d(theta));
    const double wavelen = kTwoPi / freq;
    if (wavelen < high_wavelen) {
      ff.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      ff.push_back((float)factor);
    } else {
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      ff.push_back((float)(1.0 / ((1.0 - smooth) / factor + smooth)));
    }
  }
  return ff;
}

}  // namespace oracle
