// The example consumer of the installed package (docs/library.md): an op on
// caller-owned buffers checked bit for bit, a model's teacher-forced logits,
// and an InputError naming file and field.   Usage: consumer MODEL
#include <cstdio>
#include <vector>

#include <llm_oracle/llm_oracle.h>

int main(int argc, char** argv) {
  std::printf("llm_oracle %s numerics %d\n", llm_oracle::version(), llm_oracle::numerics_version());
  // RMSNorm of a constant row: every output is exactly w (x / rms(x) = 1).
  std::vector<float> x(64, 3.0f), w(64, 0.5f), out(64);
  llm_oracle::ops::rmsnorm(out.data(), x.data(), w.data(), 1, 64, 0.0f);
  bool ok = true;
  for (float v : out) ok = ok && llm_oracle::ulp_distance(v, 0.5f) == 0;
  std::printf("rmsnorm %s\n", ok ? "ok" : "WRONG");
  if (argc < 2) return ok ? 0 : 1;
  const llm_oracle::Model m = llm_oracle::Model::load(argv[1]);
  const std::vector<int> ids = {1, 403, 407};
  const std::vector<float> logits = m.logits(ids);
  std::printf("logits %zu x %d\n", logits.size() / m.info().vocab_size, m.info().vocab_size);
  try {
    llm_oracle::LoadOptions o;
    o.context = 1 << 20;  // above the trained context: refused unless extension is allowed
    llm_oracle::Model::load(argv[1], o);
  } catch (const llm_oracle::InputError& e) {
    std::printf("error %s: %s: %s\n", e.file().c_str(), e.field().c_str(), e.what());
  }
  return ok ? 0 : 1;
}
