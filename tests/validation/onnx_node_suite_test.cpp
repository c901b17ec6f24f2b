// The ONNX backend node-test suite (Debian's libonnx-testdata): every case
// whose ops are all ones tpusim imports is imported and run on the CPU
// reference executor, and its outputs are compared with the suite's expected
// outputs at the suite's own tolerances (rtol 1e-3, atol 1e-7). The test
// prints how many cases exist, how many use only supported ops and how many
// passed; a supported case that fails, for any reason, fails the test. Each case
// the CUDA executor runs is also run by it on the host device and must give the
// CPU executor's bits, and, where a GPU is visible, on the GPU within
// tests/support/gpu_bound.hpp's bound. TPUSIM_ONNX_NODE_SUITE names another copy of
// the suite (scripts/gpu-check.sh carries Debian's to a GPU machine).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "frontend/import/onnx_import.hpp"
#include "frontend/import/onnx_tensor.hpp"
#include "reference/cpu/cpu_executor.hpp"
#include "reference/cuda/cuda_device.hpp"
#include "reference/cuda/cuda_executor.hpp"
#include "reference/cuda/host_device.hpp"
#include "sim/common/error.hpp"
#include "tests/support/gpu_bound.hpp"

namespace tpusim {
namespace {

namespace fs = std::filesystem;

std::string suiteDir() {
  const char* dir = std::getenv("TPUSIM_ONNX_NODE_SUITE");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/libonnx-testdata/data/node";
}

bool gpuVisible() {
  try {
    reference::firstCudaDevice();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::set<std::string> opList(const char* text) {
  std::set<std::string> ops;
  std::stringstream list(text);
  std::string op;
  while (std::getline(list, op, ',')) {
    op.erase(0, op.find_first_not_of(' '));
    ops.insert(op);
  }
  return ops;
}

std::set<std::string> supportedOps() {
  return opList(supportedOnnxOps());
}

// Inputs that tpusim needs while compiling: every input of an op it evaluates only at
// compile time (Range, the comparisons, ...), Dropout's ratio and training_mode, Resize's
// roi, scales and sizes, and OneHot's depth.
// In a model these come from Constants or shapes; the suite feeds them, so they are bound.
std::set<std::string> compileTimeInputs(const onnx::ModelProto& proto) {
  static const std::set<std::string> compile_time = opList(compileTimeOnnxOps());
  std::set<std::string> names;
  for (const auto& node : proto.graph().node()) {
    const int first = compile_time.count(node.op_type())                          ? 0
                      : node.op_type() == "Dropout" || node.op_type() == "Resize" ? 1
                                                                                  : node.input_size();
    for (int i = first; i < node.input_size(); ++i) names.insert(node.input(i));
    if (node.op_type() == "OneHot" && node.input_size() > 1) names.insert(node.input(1));  // its depth
  }
  return names;
}

// Element types tpusim has (no string, int16, uint16, ...).
bool readableType(int32_t type) {
  switch (type) {
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::BOOL: return true;
    default: return false;
  }
}

int32_t fileElementType(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  onnx::TensorProto tensor;
  if (!tensor.ParseFromIstream(&file)) return onnx::TensorProto::UNDEFINED;
  return tensor.data_type();
}

// False when the case's values are of a type tpusim lacks: non-tensor inputs or outputs
// (sequences, optionals), or tensors of another element type in the model (a Cast's
// 'to' included) or in the test data (the suite stores bf16 data as uint16).
bool usesOnlyTpusimTypes(const fs::path& dir, const onnx::ModelProto& proto) {
  std::vector<const onnx::ValueInfoProto*> values;
  for (const auto& input : proto.graph().input()) values.push_back(&input);
  for (const auto& output : proto.graph().output()) values.push_back(&output);
  for (const auto* value : values) {
    if (!value->type().has_tensor_type() || !readableType(value->type().tensor_type().elem_type())) return false;
  }
  for (const auto& node : proto.graph().node()) {
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "to" && !readableType(static_cast<int32_t>(attr.i()))) return false;
    }
  }
  for (const auto& set : fs::directory_iterator(dir)) {
    if (!set.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(set.path())) {
      if (!readableType(fileElementType(file.path()))) return false;
    }
  }
  return true;
}

// Cases that test what tpusim refuses by design: training-mode Dropout with a ratio
// above 0 draws a random mask, and a zero-size tensor is nothing a TPU step can run
// (docs/frontend.md, "Bad input"). Each must be refused with an "unsupported" error.
const std::set<std::string> kRefused = {"test_training_dropout",
                                        "test_training_dropout_default",
                                        "test_training_dropout_default_mask",
                                        "test_training_dropout_mask",
                                        "test_reshape_allowzero_reordered",
                                        "test_slice_start_out_of_bounds",
                                        "test_split_zero_size_splits",
                                        "test_tril_zero",
                                        "test_triu_zero"};

// Ops out of tpusim's scope (docs/frontend.md, "The ONNX node suite"): a TPU step has no
// strings, sequences or optionals; random draws cannot be checked against fixed outputs; and
// an output whose shape depends on the data is not a static shape.
const std::set<std::string> kOutOfScopeOps = {"StringNormalizer",
                                              "TfIdfVectorizer",
                                              "RegexFullMatch",
                                              "StringConcat",
                                              "StringSplit",
                                              "SequenceAt",
                                              "SequenceConstruct",
                                              "SequenceEmpty",
                                              "SequenceErase",
                                              "SequenceInsert",
                                              "SequenceLength",
                                              "SequenceMap",
                                              "SplitToSequence",
                                              "ConcatFromSequence",
                                              "Optional",
                                              "OptionalGetElement",
                                              "OptionalHasElement",
                                              "Bernoulli",
                                              "RandomNormal",
                                              "RandomNormalLike",
                                              "RandomUniform",
                                              "RandomUniformLike",
                                              "Multinomial",
                                              "NonMaxSuppression",
                                              "Unique",
                                              "Compress"};

// Cases of supported ops in forms not built yet (docs/frontend.md): Resize's
// tf_crop_and_resize, and a run-time scatter's mul reduction. Each must be refused with an
// "unsupported" error.
bool notBuiltYet(const std::string& name) {
  return name == "test_scatternd_multiply" || name.find("tf_crop_and_resize") != std::string::npos;
}

onnx::ModelProto loadModel(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&file)) throw Error(ErrorKind::kInvalidInput, "cannot parse " + path.string());
  return model;
}

// Empty when the values agree; otherwise what differs.
std::string compare(const ir::TensorValue& expected, const ir::TensorValue& actual) {
  if (expected.shape != actual.shape) {
    return "shape " + ir::shapeToString(actual.shape) + ", expected " + ir::shapeToString(expected.shape);
  }
  if (ir::TensorValue::isFloating(expected.dtype)) {
    for (size_t i = 0; i < expected.floats.size(); ++i) {
      const double e = expected.floats[i];
      const double a = actual.floats[i];
      if (std::isnan(e) && std::isnan(a)) continue;
      if (!(std::abs(a - e) <= 1e-7 + 1e-3 * std::abs(e))) {
        return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
      }
    }
    return "";
  }
  return expected.ints == actual.ints ? "" : "integer values differ";
}

// The cases the CUDA executor also ran, on the host device (reference/cuda/host_device.hpp)
// and, where `gpu`, on the GPU; those it refused (an op or dtype it lacks), by the reason's op
// type; and the largest normwise error the GPU gave, per width, with its case.
struct CudaTally {
  bool gpu = false;
  int ran = 0;
  int refused = 0;
  std::map<std::string, int> refused_by;
  int gpu_ran = 0;
  std::string current_case;
  std::map<std::string, std::pair<double, std::string>> gpu_worst;  // "f32" or "bf16/f16"
};

// Empty when the CUDA executor, run on the host device, gives every tensor the CPU
// executor's bits (its kernels add in the CPU's order and round once); else what differs.
std::string compareCudaOnHost(const ir::Graph& graph, const std::map<std::string, ir::TensorValue>& feeds,
                              const std::vector<ir::TensorValue>& cpu, CudaTally& tally) {
  std::optional<reference::CudaExecutor> executor;
  try {
    executor.emplace(graph);
  } catch (const Error& error) {
    if (error.kind() != ErrorKind::kUnsupported) throw;
    const std::string what = error.what();
    const size_t open = what.find('('), close = what.find(')', open);
    ++tally.refused;
    // By the op type the reason names in parentheses; a graph with no op (a folded case) by what it holds.
    ++tally.refused_by[open == std::string::npos || close == std::string::npos
                           ? "f64 graph tensors"
                           : what.substr(open + 1, close - open - 1)];
    return "";
  }
  reference::cuda::HostDevice device;
  const reference::TimedRun run = executor->runTimedOn(device, feeds, {0, 1});
  for (const ir::Tensor& tensor : graph.tensors()) {
    const ir::TensorValue& a = run.values[static_cast<size_t>(tensor.id)];
    const ir::TensorValue& b = cpu[static_cast<size_t>(tensor.id)];
    bool same = a.ints == b.ints && a.floats.size() == b.floats.size();
    for (size_t i = 0; same && i < a.floats.size(); ++i) {
      same = std::memcmp(&a.floats[i], &b.floats[i], sizeof(double)) == 0 ||
             (std::isnan(a.floats[i]) && std::isnan(b.floats[i]));
    }
    if (!same) return "the CUDA executor on the host device differs from the CPU executor in '" + tensor.name + "'";
  }
  ++tally.ran;
  if (!tally.gpu) return "";
  const reference::TimedRun gpu = executor->runTimed(feeds, {0, 1});
  for (const ir::Tensor& tensor : graph.tensors()) {
    const auto check = testing::checkGpuTensor(tensor, gpu.values[static_cast<size_t>(tensor.id)],
                                               cpu[static_cast<size_t>(tensor.id)]);
    if (!check.problem.empty()) return "the CUDA executor on the GPU is off the CPU executor in " + check.problem;
    if (!isFloatingDType(tensor.dtype)) continue;
    auto& worst = tally.gpu_worst[tensor.dtype == DType::kF32 ? "f32" : "bf16/f16"];
    if (check.normwise > worst.first || worst.second.empty())
      worst = {check.normwise, tally.current_case + " '" + tensor.name + "'"};
  }
  ++tally.gpu_ran;
  return "";
}

// Runs every test_data_set_* of one case; returns the first problem, or "".
// Integer inputs (shapes, axes, labels) are bound as compile-time constants from the
// test data, as a TPU compiler needs them static; float inputs stay runtime inputs.
std::string runCase(const fs::path& dir, const onnx::ModelProto& proto, CudaTally& cuda) {
  std::vector<std::string> inputs;
  std::set<std::string> initializers;
  for (const auto& init : proto.graph().initializer()) initializers.insert(init.name());
  for (const auto& input : proto.graph().input()) {
    if (!initializers.count(input.name())) inputs.push_back(input.name());
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return "no test data";
  const std::set<std::string> compile_time = compileTimeInputs(proto);
  for (const fs::path& set : sets) {
    OnnxImportOptions options;
    std::map<std::string, ir::TensorValue> runtime;
    for (size_t i = 0; i < inputs.size(); ++i) {
      ir::TensorValue value = readOnnxTensorFile((set / ("input_" + std::to_string(i) + ".pb")).string());
      const bool known = !ir::TensorValue::isFloating(value.dtype) || compile_time.count(inputs[i]);
      (known ? options.known_inputs : runtime)[inputs[i]] = std::move(value);
    }
    const ImportedModel model = importOnnxModel(proto, options);
    const reference::CpuExecutor executor(model.graph, reference::CpuOptions{});
    std::map<std::string, ir::TensorValue> feeds = model.initializers;
    feeds.insert(runtime.begin(), runtime.end());
    const std::vector<ir::TensorValue> values = executor.run(feeds);
    if (const std::string problem = compareCudaOnHost(model.graph, feeds, values, cuda); !problem.empty()) {
      return set.filename().string() + ": " + problem;
    }
    for (size_t i = 0; i < model.graph.outputs().size(); ++i) {
      const ir::TensorValue expected = readOnnxTensorFile((set / ("output_" + std::to_string(i) + ".pb")).string());
      const std::string problem = compare(expected, values[static_cast<size_t>(model.graph.outputs()[i])]);
      if (!problem.empty()) return set.filename().string() + " output " + std::to_string(i) + ": " + problem;
    }
  }
  return "";
}

// Cases whose model file disagrees with the outputs stored beside it, and the repair that
// makes the model the one the outputs were generated from. test_adam_multiple's outputs were
// computed with epsilon 1e-2 but its Adam node has no epsilon, so it reads the schema's
// default 1e-6 (onnx/onnx#7749); the case runs with the attribute added.
int repairKnownDefects(const std::string& name, onnx::ModelProto& model) {
  if (name != "test_adam_multiple") return 0;
  for (auto& node : *model.mutable_graph()->mutable_node()) {
    if (node.op_type() != "Adam") continue;
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "epsilon") return 0;  // a fixed copy of the suite
    }
    onnx::AttributeProto* epsilon = node.add_attribute();
    epsilon->set_name("epsilon");
    epsilon->set_type(onnx::AttributeProto::FLOAT);
    epsilon->set_f(1e-2f);
  }
  return 1;
}

TEST(OnnxNodeSuite, EverySupportedCasePasses) {
  const std::string suite = suiteDir();
  if (!fs::exists(suite)) GTEST_SKIP() << suite << " is missing: install libonnx-testdata (scripts/setup.sh does)";
  const std::set<std::string> supported = supportedOps();
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(suite)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  int total = 0;
  int of_supported_ops = 0;
  int passed = 0;
  int older_opset = 0;
  int relabelled = 0;
  int other_types = 0;
  int not_built = 0;
  int refused = 0;
  int repaired = 0;
  int out_of_scope = 0;  // cases of an op in kOutOfScopeOps
  int unread_types = 0;  // cases (of any ops) with value types tpusim lacks
  std::map<std::string, int> passed_by_op;
  CudaTally cuda;
  cuda.gpu = gpuVisible();
  for (const fs::path& dir : cases) {
    if (!fs::exists(dir / "model.onnx")) continue;
    ++total;
    cuda.current_case = dir.filename().string();
    const onnx::ModelProto proto = loadModel(dir / "model.onnx");
    std::set<std::string> ops;
    for (const auto& node : proto.graph().node()) ops.insert(node.op_type());
    if (!usesOnlyTpusimTypes(dir, proto)) {
      ++unread_types;
    } else if (std::any_of(ops.begin(), ops.end(), [](const std::string& op) { return kOutOfScopeOps.count(op); })) {
      ++out_of_scope;
    }
    if (!std::includes(supported.begin(), supported.end(), ops.begin(), ops.end())) continue;
    // tpusim reads opset 13 and later; older cases of supported ops are counted apart.
    // (A case of training ops alone, domain ai.onnx.preview.training, imports no default-domain opset.)
    int64_t opset = kOldestOnnxOpset;
    for (const auto& import : proto.opset_import()) {
      if (import.domain().empty() || import.domain() == "ai.onnx") opset = import.version();
    }
    onnx::ModelProto runnable = proto;
    if (opset < kOldestOnnxOpset) {
      // An older case still tests tpusim when each of its ops resolves to the same
      // version at its opset as at opset 13: then it is an opset-13 model in all but name.
      bool same = true;
      for (const std::string& op : ops) {
        const auto* old_schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset), "");
        const auto* new_schema = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(kOldestOnnxOpset), "");
        same = same && old_schema && new_schema && old_schema->since_version() == new_schema->since_version();
      }
      if (!same) {
        ++older_opset;
        continue;
      }
      for (auto& import : *runnable.mutable_opset_import()) {
        if (import.domain().empty() || import.domain() == "ai.onnx") import.set_version(kOldestOnnxOpset);
      }
      ++relabelled;
    }
    if (!usesOnlyTpusimTypes(dir, proto)) {
      ++other_types;
      continue;
    }
    if (kRefused.count(dir.filename().string()) || notBuiltYet(dir.filename().string())) {
      ++(kRefused.count(dir.filename().string()) ? refused : not_built);
      try {
        runCase(dir, runnable, cuda);
        ADD_FAILURE() << dir.filename().string() << " should be refused";
      } catch (const Error& error) {
        EXPECT_EQ(error.kind(), ErrorKind::kUnsupported) << dir.filename().string() << ": " << error.what();
      }
      continue;
    }
    ++of_supported_ops;
    repaired += repairKnownDefects(dir.filename().string(), runnable);
    std::string problem;
    try {
      problem = runCase(dir, runnable, cuda);
    } catch (const Error& error) {
      problem = error.what();
    }
    if (problem.empty()) {
      ++passed;
      for (const std::string& op : ops) ++passed_by_op[op];
    } else {
      ADD_FAILURE() << dir.filename().string() << ": " << problem;
    }
  }
  std::cout << "ONNX node tests: " << total << " cases; " << of_supported_ops << " use only supported ops ("
            << relabelled << " of them at an older opset whose op versions are opset " << kOldestOnnxOpset << "'s); "
            << passed << " passed; " << older_opset << " more use supported ops in versions older than opset "
            << kOldestOnnxOpset << "'s, not read; " << other_types
            << " more use value types tpusim lacks (string, int16, sequences, ...), not read; " << refused
            << " refused by design (random training-mode Dropout, zero-size tensors), each checked to be an "
               "unsupported error; "
            << not_built
            << " in forms not built yet (tf_crop_and_resize, a scatter's mul), each "
               "checked to be an "
               "unsupported error; "
            << repaired << " run with a model attribute repaired to match its outputs (onnx/onnx#7749)\n";
  // In scope: the cases whose value types tpusim has, less those of out-of-scope ops.
  const int in_scope = total - unread_types - out_of_scope;
  std::cout << "In scope: " << in_scope << " cases (" << total << " less " << unread_types
            << " with value types tpusim lacks and " << out_of_scope
            << " of strings, sequences, optionals, random draws or data-dependent shapes); " << passed
            << " pass: " << std::fixed << std::setprecision(1) << 100.0 * passed / in_scope << "%\n";
  EXPECT_GE(passed, 0.85 * in_scope);
  for (const auto& [op, count] : passed_by_op) std::cout << "  " << op << ": " << count << " passed\n";
  std::cout << "CUDA executor on the host device: " << cuda.ran
            << " test data sets ran, bit for bit like the CPU executor; " << cuda.refused
            << " refused (an op or dtype it lacks), by op:";
  for (const auto& [op, count] : cuda.refused_by) std::cout << " " << op << " " << count << ";";
  std::cout << "\n";
  if (cuda.gpu) {
    std::cout << "CUDA executor on the GPU: " << cuda.gpu_ran
              << " test data sets within the bound of the CPU executor;";
    for (const auto& [width, worst] : cuda.gpu_worst) {
      std::cout << " worst normwise error in " << width << " " << worst.first << " (" << worst.second << ");";
    }
    std::cout << "\n";
    EXPECT_EQ(cuda.gpu_ran, cuda.ran);
  } else {
    std::cout << "CUDA executor on the GPU: not run (no CUDA device visible)\n";
  }
  EXPECT_GT(of_supported_ops, 0);
  EXPECT_EQ(passed, of_supported_ops);
  // Debian's suite (libonnx-testdata 1.12): 382 of its data sets run on the CUDA executor; fewer means it lost an op.
  EXPECT_GE(cuda.ran, 382);
}

}  // namespace
}  // namespace tpusim
