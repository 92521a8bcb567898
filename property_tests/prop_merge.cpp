// merge(shards(log)) == replay(log) (tools/shard.h, docs/scale.md) over random
// multi-choice engine logs, through the `oracle` binary as users run it:
//   one     oracle replay LOG --report one.json                 (one process)
//   shards  oracle replay LOG --shard I/N --part pI --report m.json, I in a
//           random order, then oracle merge p0..pN-1
//   naive   every record alone: oracle replay LINE_i --report r_i.json
// The merged report file and stdout equal one process's byte for byte (every
// field), the exit codes agree, and — against the brute-force side — record i
// of the merged report is record 0 of LINE_i's report with its line number set
// to i + 1 (and the file:line its messages name), and the summary counts are the statuses of those records counted here.
// Logs: 1–7 vLLM /v1/completions records on stories260K, 1–3 choices each of
// 1–5 random token ids with random logged logprobs, random temperature / top-k /
// top-p / min-p / repetition penalty; about one in six records is malformed
// (an unknown request field, a choice without tokens) and so an ERROR record.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "generators.h"

using nlohmann::json;

namespace {

std::string shared_dir() {
  const char* d = std::getenv("ORACLE_SHARED_DIR");
  return d ? d : "../shared";
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_all(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// Runs `args` (already quoted) with stdout to `out`; returns the exit code.
int run_oracle(const std::string& args, const std::string& out) {
  const std::string model = shared_dir() + "/models/stories260K/stories260K.bin";
  const std::string tok = shared_dir() + "/models/stories260K/tok512.bin";
  const std::string cmd = std::string(ORACLE_BIN) + " " + args + " -m '" + model + "' -z '" + tok + "' -q >'" + out +
                          "' 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int merge(const std::vector<std::string>& parts, const std::string& out) {
  std::string cmd = std::string(ORACLE_BIN) + " merge";
  for (const std::string& p : parts) cmd += " '" + p + "'";
  cmd += " >'" + out + "' 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::vector<int> gen_ids(int min_n, int max_n) {
  return *rc::gen::container<std::vector<int>>((size_t)*rc::gen::inRange(min_n, max_n + 1), rc::gen::inRange(0, 512));
}

json gen_record() {
  const std::vector<int> prompt = gen_ids(1, 6);
  json req = {{"model", "stories260K"}, {"prompt", prompt}, {"max_tokens", 5}, {"return_token_ids", true},
              {"temperature", *rc::gen::element(0.0, 0.7, 1.0, 1.5)}};
  if (*rc::gen::inRange(0, 2)) req["top_k"] = *rc::gen::element(1, 5, 40);
  if (*rc::gen::inRange(0, 2)) req["top_p"] = *rc::gen::element(0.5, 0.9);
  if (*rc::gen::inRange(0, 3) == 0) req["min_p"] = 0.05;
  if (*rc::gen::inRange(0, 3) == 0) req["repetition_penalty"] = 1.3;
  const int n = *rc::gen::inRange(1, 4);
  req["n"] = n;
  req["logprobs"] = 0;
  json choices = json::array();
  for (int c = 0; c < n; c++) {
    const std::vector<int> ids = gen_ids(1, 5);
    json lps = json::array();
    for (size_t i = 0; i < ids.size(); i++) lps.push_back(-(double)*rc::gen::inRange(0, 8000) / 1000.0);
    json choice = {{"index", c}, {"text", ""}, {"token_ids", ids}, {"finish_reason", "length"}};
    if (*rc::gen::inRange(0, 2)) choice["logprobs"] = {{"token_logprobs", lps}};  // else only the support is checked
    choices.push_back(choice);
  }
  const int fault = *rc::gen::inRange(0, 12);
  if (fault == 0) req["frobnicate"] = true;                     // unknown request field: ERROR
  if (fault == 1) choices[0].erase("token_ids"), choices[0]["logprobs"] = json::object();  // no tokens: ERROR
  json resp = {{"object", "text_completion"}, {"model", "stories260K"}, {"prompt_token_ids", prompt},
               {"choices", choices}};
  return {{"request", req}, {"response", resp}};
}

}  // namespace

TEST_CASE("property: merge(shards(log)) == replay(log) == the records replayed one by one", "[property][merge]") {
  char tmpl[] = "/tmp/prop_merge_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  struct Cleanup {  // also when an assertion ends the test early
    std::string dir;
    ~Cleanup() { std::system(("rm -rf '" + dir + "'").c_str()); }
  } cleanup{dir};
  oracle::prop::Shapes shapes;
  oracle::prop::check("report and stdout of N shards merged == one process; record i == LINE_i replayed alone", 40,
                      shapes, [&] {
    const int n_records = *rc::gen::inRange(1, 8);
    std::vector<json> records;
    std::string log;
    for (int i = 0; i < n_records; i++) {
      records.push_back(gen_record());
      log += records.back().dump() + "\n";
    }
    const std::string log_path = dir + "/log.jsonl";
    write_all(log_path, log);
    const int rc_one = run_oracle("replay '" + log_path + "' --report '" + dir + "/one.json'", dir + "/one.txt");
    RC_ASSERT(rc_one == 0 || rc_one == 1);

    const int n = *rc::gen::inRange(1, n_records + 2);  // more shards than records too
    std::vector<int> order(n);
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) std::swap(order[i], order[*rc::gen::inRange(0, i + 1)]);  // shards run in any order
    std::vector<std::string> parts(n);
    for (int i : order) {
      parts[i] = dir + "/part" + std::to_string(i) + ".json";
      const std::string args = "replay '" + log_path + "' --report '" + dir + "/m.json' --shard " + std::to_string(i) +
                               "/" + std::to_string(n) + " --part '" + parts[i] + "'";
      RC_ASSERT(run_oracle(args, dir + "/shard.txt") == 0);
    }
    const int rc_merge = merge(parts, dir + "/m.txt");
    shapes.add("records", n_records);
    shapes.add("shards", n);
    RC_ASSERT(rc_merge == rc_one);
    RC_ASSERT(read_all(dir + "/m.json") == read_all(dir + "/one.json"));
    RC_ASSERT(read_all(dir + "/m.txt") == read_all(dir + "/one.txt"));

    const json merged = json::parse(read_all(dir + "/m.json"));
    RC_ASSERT(merged.at("records").size() == (size_t)n_records);
    std::map<std::string, int> counts;
    int choices = 0;
    for (int i = 0; i < n_records; i++) {
      const std::string line_path = dir + "/line.jsonl";
      write_all(line_path, records[i].dump() + "\n");
      run_oracle("replay '" + line_path + "' --report '" + dir + "/r.json'", dir + "/r.txt");
      json alone = json::parse(read_all(dir + "/r.json")).at("records").at(0);
      alone["line"] = i + 1;
      std::string text = alone.dump();  // messages name the file and line: LINE_i's line 1 is the log's i + 1
      const std::string from = line_path + ":1", to = log_path + ":" + std::to_string(i + 1);
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
      RC_ASSERT(merged.at("records").at(i).dump() == text);
      counts[alone.at("status").get<std::string>()]++;
      choices += alone.at("n_choices").get<int>();
    }
    shapes.add("choices", choices);
    for (const char* status : {"MATCH", "PLAUSIBLE", "DIVERGED", "ERROR"})
      shapes.add(std::string(status) + " records", counts[status]);
    const json& s = merged.at("summary");
    RC_ASSERT(s.at("records") == n_records);
    RC_ASSERT(s.at("match") == counts["MATCH"]);
    RC_ASSERT(s.at("plausible") == counts["PLAUSIBLE"]);
    RC_ASSERT(s.at("diverged") == counts["DIVERGED"]);
    RC_ASSERT(s.at("error") == counts["ERROR"]);
    RC_ASSERT(s.at("unknown_model") == counts["UNKNOWN_MODEL"]);
  });
}
