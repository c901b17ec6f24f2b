#include "api/validation/measured_cases.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

using Json = nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorKind::kInvalidInput, where + ": " + what);
}

std::vector<int64_t> positiveInts(const Json& value, const std::string& where, const char* field) {
  if (!value.is_array() || value.empty()) bad(where, std::string("'") + field + "' must be a non-empty list of integers");
  std::vector<int64_t> ints;
  for (const Json& v : value) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0) {
      bad(where, std::string("'") + field + "' must hold positive integers, not " + v.dump());
    }
    ints.push_back(v.get<int64_t>());
  }
  return ints;
}

std::vector<int64_t> ints(const Json& value, const std::string& where, const char* field) {
  std::vector<int64_t> out;
  const Json list = value.is_array() ? value : Json::array({value});
  for (const Json& v : list) {
    if (!v.is_number_integer()) bad(where, std::string("'") + field + "' must hold integers, not " + v.dump());
    out.push_back(v.get<int64_t>());
  }
  return out;
}

std::string text(const Json& c, const char* field, const std::string& where, const std::string& fallback) {
  if (!c.contains(field)) return fallback;
  if (!c.at(field).is_string()) bad(where, std::string("'") + field + "' must be a string");
  return c.at(field).get<std::string>();
}

MeasuredCase parseCase(const Json& c, size_t index, const std::string& label) {
  const std::string where = label + ": case " + std::to_string(index);
  if (!c.is_object()) bad(where, "is not an object");
  MeasuredCase out;
  out.index = index;
  out.op = text(c, "op", where, "");
  if (out.op.empty()) bad(where, "has no 'op'");
  if (out.op == "matmul") {
    if (!c.contains("dims") || !c.at("dims").is_object()) bad(where, "a matmul needs 'dims' {\"M\", \"K\", \"N\"}");
    for (const char* d : {"M", "K", "N"}) {
      const Json& dims = c.at("dims");
      if (!dims.contains(d)) bad(where, std::string("'dims' lacks ") + d);
      out.shape.push_back(positiveInts(Json::array({dims.at(d)}), where, "dims").front());
    }
  } else {
    if (!c.contains("shape")) bad(where, "needs a 'shape'");
    out.shape = positiveInts(c.at("shape"), where, "shape");
  }
  if (out.shape.size() > 8) bad(where, "a shape of more than 8 dimensions");
  double elements = 1;
  for (int64_t d : out.shape) elements *= static_cast<double>(d);
  if (elements > 1e12) bad(where, "has more than 10^12 elements");
  out.dtype = text(c, "dtype", where, "float32");
  out.out_dtype = text(c, "out_dtype", where, "");
  if (c.contains("axis") && !c.at("axis").is_null()) out.axis = ints(c.at("axis"), where, "axis");
  if (c.contains("window")) out.window = positiveInts(c.at("window"), where, "window");
  if (c.contains("strides")) out.strides = positiveInts(c.at("strides"), where, "strides");
  out.padding = text(c, "padding", where, "VALID");
  if (!c.contains("measured_us") || !c.at("measured_us").is_number()) bad(where, "needs a number 'measured_us'");
  out.measured_us = c.at("measured_us").get<double>();
  if (!(out.measured_us > 0) || !std::isfinite(out.measured_us)) {
    bad(where, "'measured_us' must be a positive time in microseconds");
  }
  return out;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& measuredOps() {
  static const std::vector<std::pair<std::string, std::string>> kOps = {
      {"matmul", "MatMul of A[M,K] and B[K,N] (dims M, K, N)"},
      {"add", "Add of two tensors of the shape"},
      {"sub", "Sub of two tensors of the shape"},
      {"mul", "Mul of two tensors of the shape"},
      {"div", "Div of two tensors of the shape"},
      {"relu", "Relu"},
      {"leaky_relu", "LeakyRelu (alpha 0.01, JAX's default)"},
      {"parametric_relu", "PRelu with one slope"},
      {"elu", "Elu (alpha 1)"},
      {"selu", "Selu"},
      {"sigmoid", "Sigmoid"},
      {"tanh", "Tanh"},
      {"binary_step", "Cast(x >= 0) to float32"},
      {"linear", "1.0 * x + 0.0 (a copy once simplified)"},
      {"layer_norm", "LayerNormalization over 'axis' (default the last), in out_dtype"},
      {"rms_norm", "x / sqrt(mean(x^2) + eps) * scale over 'axis' (default the last), in out_dtype"},
      {"batch_norm_inference", "BatchNormalization with running statistics, NCHW, in out_dtype"},
      {"max_pool", "MaxPool over H, W of NCHW ('window', 'strides', 'padding')"},
      {"avg_pool", "AveragePool over H, W of NCHW ('window', 'strides', 'padding')"},
  };
  return kOps;
}

MeasuredCases parseMeasuredCases(const nlohmann::json& file, const std::string& label) {
  if (!file.is_object() || !file.contains("cases") || !file.at("cases").is_array()) {
    throw Error(ErrorKind::kInvalidInput, label + ": not a measurement file (an object with a list 'cases')");
  }
  MeasuredCases out;
  if (file.contains("source") && file.at("source").is_string()) out.source = file.at("source").get<std::string>();
  if (file.contains("tpu") && file.at("tpu").is_string()) out.chip = file.at("tpu").get<std::string>();
  const Json& cases = file.at("cases");
  if (cases.empty()) throw Error(ErrorKind::kInvalidInput, label + ": the file has no cases");
  for (size_t i = 0; i < cases.size(); ++i) out.cases.push_back(parseCase(cases[i], i, label));
  return out;
}

MeasuredCases readMeasuredCases(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    throw Error(ErrorKind::kInvalidInput, "measurement file '" + path + "' does not exist");
  }
  std::ifstream stream(path);
  Json file;
  try {
    file = Json::parse(stream);
  } catch (const Json::exception& error) {  // parse_error, or out_of_range for a number like 1e400
    throw Error(ErrorKind::kInvalidInput, path + ": not valid JSON (" + error.what() + ")");
  }
  return parseMeasuredCases(file, path);
}

std::string caseLabel(const MeasuredCase& c) {
  std::ostringstream out;
  out << c.op << " ";
  if (c.op == "matmul" && c.shape.size() == 3) {
    out << c.shape[0] << "x" << c.shape[1] << "x" << c.shape[2];
  } else {
    out << "[";
    for (size_t i = 0; i < c.shape.size(); ++i) out << (i ? ", " : "") << c.shape[i];
    out << "]";
  }
  return out.str();
}

}  // namespace tpusim
