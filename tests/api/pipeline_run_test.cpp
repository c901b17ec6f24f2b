// Pipeline parallelism on a model (api/pipeline_run.hpp, docs/strategies.md): a model of
// identical layers against the equal-stage closed forms, and the stage cut itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include <unistd.h>

#include "api/session.hpp"
#include "frontend/passes/pipeline_stages.hpp"
#include "frontend/train/loss_scaling.hpp"
#include "sim/common/error.hpp"
#include "tests/support/onnx_builder.hpp"

namespace tpusim {
namespace {

constexpr int64_t kWidth = 1024;

// L identical layers h = relu(Gemm(h + b_i, w_i, c_i)), [batch, 1024] each; the loss is
// added on the last one. Every layer (the first too, for its b_0) computes its input's
// gradient, so every stage does the same work but the loss.
std::string identicalLayers(int layers) {
  testing::OnnxBuilder b;
  b.input("h0", {-1, kWidth});
  for (int i = 0; i < layers; ++i) {
    const std::string l = std::to_string(i), next = std::to_string(i + 1), in = "h" + l, out = "h" + next;
    b.weight("b" + l, {kWidth}).weight("w" + l, {kWidth, kWidth}).weight("c" + l, {kWidth});
    b.node("Add", {in, "b" + l}, "s" + l).set_name("/l" + l + "/Add");
    b.gemm("s" + l, "w" + l, "c" + l, "g" + l);
    b.model().mutable_graph()->mutable_node()->rbegin()->set_name("/l" + l + "/Gemm");
    b.node("Relu", {"g" + l}, out).set_name("/l" + l + "/Relu");
  }
  const std::string count = std::to_string(layers);
  b.output("h" + count);
  // A directory of this process's own: ctest runs the tests of this file in parallel processes.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tpusim_pipeline_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / ("tpusim_pipeline_" + count + ".onnx")).string();
  std::ofstream file(path, std::ios::binary);
  b.model().SerializeToOstream(&file);
  return path;
}

RunRequest pipelineRequest(const std::string& model, int64_t pp, int64_t micro_batches, const std::string& schedule) {
  RunRequest request;
  request.model_path = model;
  request.batch = 8 * micro_batches;  // micro-batches of 8
  request.topology = std::to_string(pp) + "x1x1";
  request.pipeline_parallel = pp;
  request.micro_batches = micro_batches;
  request.pipeline_schedule = schedule;
  request.instruction_timeline = false;
  // Transfers nearly free: the closed forms leave them out.
  request.overrides = {{"ici.link_bandwidth_gbps", "100000"}, {"ici.link_latency_ns", "0"}};
  return request;
}

TEST(PipelineRun, IdenticalLayersGiveTheEqualStageBubbleUnderBothSchedules) {
  const std::string model = identicalLayers(16);
  const nlohmann::ordered_json gpipe = runRequest(pipelineRequest(model, 4, 8, "gpipe")).report["pipeline"];
  const nlohmann::ordered_json one_f_one_b = runRequest(pipelineRequest(model, 4, 8, "1f1b")).report["pipeline"];
  // (P - 1) / (M + P - 1) = 3 / 11 = 27.3%, within one percentage point: the last stage also
  // computes the loss (forward 3% longer) and starts its backward from it, not from a received
  // gradient (backward 5% shorter), so its stages are equal to about 2%.
  EXPECT_NEAR(gpipe["bubble"].get<double>(), 3.0 / 11.0, 0.01);
  EXPECT_NEAR(one_f_one_b["bubble"].get<double>(), 3.0 / 11.0, 0.01);
  EXPECT_DOUBLE_EQ(gpipe["ideal_bubble"].get<double>(), 3.0 / 11.0);
  const auto step = [](const nlohmann::ordered_json& p) { return static_cast<double>(p["step_cycles"].get<uint64_t>()); };
  EXPECT_NEAR(step(gpipe), step(one_f_one_b), 0.01 * step(gpipe));
  // The schedule is (M + P - 1)(F + B) of the slowest stage, within 1%.
  uint64_t slowest = 0;
  for (const auto& stage : gpipe["per_stage"]) {
    slowest = std::max(slowest, stage["forward_cycles"].get<uint64_t>() + stage["backward_cycles"].get<uint64_t>());
    EXPECT_EQ(stage["layers"].size(), 4u);
  }
  const double schedule = static_cast<double>(gpipe["schedule_cycles"].get<uint64_t>());
  EXPECT_NEAR(schedule, 11.0 * static_cast<double>(slowest), 0.01 * schedule);
  // GPipe keeps all M micro-batches on every stage, 1F1B P - s on stage s.
  for (size_t s = 0; s < 4; ++s) {
    const auto& g = gpipe["per_stage"][s];
    const auto& f = one_f_one_b["per_stage"][s];
    EXPECT_EQ(g["peak_micro_batches_in_flight"].get<uint32_t>(), 8u);
    EXPECT_EQ(f["peak_micro_batches_in_flight"].get<uint32_t>(), 4u - s);
    EXPECT_EQ(g["peak_activation_bytes"].get<uint64_t>(), 8 * g["activation_bytes"].get<uint64_t>());
    EXPECT_LT(f["peak_activation_bytes"].get<uint64_t>(), g["peak_activation_bytes"].get<uint64_t>());
    EXPECT_LT(f["hbm_peak_bytes"].get<uint64_t>(), g["hbm_peak_bytes"].get<uint64_t>());
  }
}

TEST(PipelineRun, StagesSendTheirBoundaryActivationAndReceiveItsGradient) {
  const PipelineStages cut = [] {
    RunRequest request;
    request.model_path = identicalLayers(4);
    request.batch = 8;
    return splitPipelineStages(buildModelGraph(request).graph, 2, "four.onnx");
  }();
  ASSERT_EQ(cut.stages.size(), 2u);
  EXPECT_EQ(cut.stages[0].layers, (std::vector<std::string>{"/l0", "/l1"}));
  EXPECT_EQ(cut.stages[1].layers, (std::vector<std::string>{"/l2", "/l3"}));
  // Forward: h2 = relu(g1), [8, 1024] f32; backward: its gradient. 8 x 1024 x 4 = 32768 bytes each.
  ASSERT_EQ(cut.transfers.size(), 2u);
  EXPECT_EQ(cut.transfers[0].tensor, "h2");
  EXPECT_FALSE(cut.transfers[0].gradient);
  EXPECT_EQ(cut.transfers[0].bytes, 32768u);
  EXPECT_EQ(cut.transfers[0].from, 0u);
  EXPECT_TRUE(cut.transfers[1].gradient);
  EXPECT_EQ(cut.transfers[1].bytes, 32768u);
  EXPECT_EQ(cut.transfers[1].from, 1u);
  EXPECT_EQ(cut.transfers[1].to, 0u);
  EXPECT_GT(cut.stages[0].activation_bytes, 0u);
}

PipelineStages cutOf(const std::string& model, const std::string& precision, int64_t stages) {
  RunRequest request;
  request.model_path = model;
  request.batch = 8;
  request.precision = precision;
  return splitPipelineStages(buildModelGraph(request).graph, stages, "model.onnx");
}

// The weights a stage holds and those it updates, by name.
std::set<std::string> weightsOf(const ir::Graph& graph) {
  std::set<std::string> out;
  for (const ir::Tensor& t : graph.tensors()) {
    if (t.role == ir::TensorRole::kWeight && graph.producer(t.id) == nullptr) out.insert(t.name);
  }
  return out;
}
std::set<std::string> updatedIn(const ir::Graph& graph) {
  std::set<std::string> out;
  for (const ir::Op& op : graph.ops()) {
    if (op.type == ir::OpType::kSgdUpdate || op.type == ir::OpType::kOptimizerUpdate) {
      out.insert(graph.tensor(op.inputs[0]).name);
    }
  }
  return out;
}

TEST(PipelineRun, MixedBfloat16CastsEachWeightOnItsStageAndSendsHalfTheBytes) {
  const std::string model = identicalLayers(4);
  const PipelineStages f32 = cutOf(model, "float32", 2);
  const PipelineStages bf16 = cutOf(model, "mixed_bfloat16", 2);
  ASSERT_EQ(bf16.stages.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    const ir::Graph& g = bf16.stages[s].graph;
    EXPECT_EQ(bf16.stages[s].layers, f32.stages[s].layers);
    EXPECT_EQ(weightsOf(g), weightsOf(f32.stages[s].graph));
    EXPECT_EQ(updatedIn(g), updatedIn(f32.stages[s].graph));
    EXPECT_EQ(updatedIn(g), weightsOf(g));
    // Each weight it holds is cast here, and only those: 3 weights a layer, 2 layers.
    std::set<std::string> cast;
    for (const ir::Op& op : g.ops()) {
      const ir::Tensor& in = g.tensor(op.inputs[0]);
      if (op.type == ir::OpType::kCast && in.role == ir::TensorRole::kWeight) {
        EXPECT_EQ(op.name, in.name + "/cast_bf16");
        EXPECT_EQ(g.tensor(op.outputs[0]).dtype, DType::kBF16);
        cast.insert(in.name);
      }
    }
    EXPECT_EQ(cast, weightsOf(g));
    EXPECT_EQ(cast.size(), 6u);
  }
  // The graph input h0 is cast on stage 0, which reads it.
  const auto casts = [](const ir::Graph& g, const std::string& name) {
    return std::any_of(g.ops().begin(), g.ops().end(), [&](const ir::Op& op) { return op.name == name; });
  };
  EXPECT_TRUE(casts(bf16.stages[0].graph, "h0/cast_bf16"));
  EXPECT_FALSE(casts(bf16.stages[1].graph, "h0/cast_bf16"));
  // The same crossings as float32, in bf16: 8 x 1024 x 2 = 16384 bytes each way.
  ASSERT_EQ(bf16.transfers.size(), f32.transfers.size());
  for (size_t i = 0; i < f32.transfers.size(); ++i) {
    EXPECT_EQ(bf16.transfers[i].tensor, f32.transfers[i].tensor);
    EXPECT_EQ(bf16.transfers[i].gradient, f32.transfers[i].gradient);
    EXPECT_EQ(2 * bf16.transfers[i].bytes, f32.transfers[i].bytes);
  }
  // What a micro-batch keeps for its backward is bf16 too (the weights' casts are the same
  // for every micro-batch, held once, not counted): stage 0, s0, h1, s1, h2 of [8, 1024] (a
  // ReLU's gradient reads its output); stage 1, s2, h3, s3, h4, in bf16 h4 also in f32 (the
  // loss reads it cast back), and the 8 labels.
  EXPECT_EQ(f32.stages[0].activation_bytes, 4u * 32768);
  EXPECT_EQ(bf16.stages[0].activation_bytes, 4u * 16384);
  EXPECT_EQ(f32.stages[1].activation_bytes, 4u * 32768 + 64);
  EXPECT_EQ(bf16.stages[1].activation_bytes, 4u * 16384 + 32768 + 64);
}

TEST(PipelineRun, MixedFloat16ChecksEachStagesGradientsAndAddsTheOtherStagesSums) {
  const std::string model = identicalLayers(4);
  const PipelineStages bf16 = cutOf(model, "mixed_bfloat16", 2);
  const PipelineStages f16 = cutOf(model, "mixed_float16", 2);
  EXPECT_FALSE(bf16.loss_scaling);
  EXPECT_TRUE(f16.loss_scaling);
  // The check sends nothing across a boundary: the crossings are bf16's, f16 is as wide.
  ASSERT_EQ(f16.transfers.size(), bf16.transfers.size());
  for (size_t i = 0; i < f16.transfers.size(); ++i) {
    EXPECT_EQ(f16.transfers[i].tensor, bf16.transfers[i].tensor);
    EXPECT_EQ(f16.transfers[i].bytes, bf16.transfers[i].bytes);
  }
  for (size_t s = 0; s < 2; ++s) {
    const ir::Graph& g = f16.stages[s].graph;
    EXPECT_EQ(updatedIn(g), updatedIn(bf16.stages[s].graph));
    EXPECT_EQ(f16.stages[s].activation_bytes, bf16.stages[s].activation_bytes);
    // Its own 6 gradients summed, the other stages' partial sum received, one flag, and
    // each of its gradients gated by that flag and unscaled here.
    std::set<std::string> gated, summed;
    int flags = 0;
    for (const ir::Op& op : g.ops()) {
      const std::string& name = op.name;
      if (op.type == ir::OpType::kReduce && name.find(".grad_scaled.sum") != std::string::npos) {
        summed.insert(name.substr(0, name.find(".grad_scaled.sum")));
      }
      if (op.type == ir::OpType::kWhere) {
        EXPECT_EQ(g.tensor(op.inputs[0]).name, kGradientsFiniteTensor);
        EXPECT_NE(g.producer(op.inputs[0]), nullptr);  // made here
        gated.insert(name.substr(0, name.find(".grad_kept")));
      }
      flags += g.tensor(op.outputs[0]).name == kGradientsFiniteTensor;
    }
    EXPECT_EQ(flags, 1);
    EXPECT_EQ(gated, updatedIn(g));
    EXPECT_EQ(summed, updatedIn(g));
    const auto named = [&](const std::string& name) {
      const auto& ts = g.tensors();
      const auto found = std::find_if(ts.begin(), ts.end(), [&](const ir::Tensor& t) { return t.name == name; });
      return found == ts.end() ? -1 : found->id;
    };
    const int others = named(kLossScaleOtherStagesTensor), partial = named(kLossScalePartialTensor);
    ASSERT_GE(others, 0);
    ASSERT_GE(partial, 0);
    EXPECT_EQ(g.producer(others), nullptr);
    EXPECT_EQ(g.tensor(partial).bytes(), 4u);
    EXPECT_NE(std::find(g.outputs().begin(), g.outputs().end(), partial), g.outputs().end());
    EXPECT_GE(named(kLossScaleTensor), 0);  // the step's scale, on every stage
  }
}

TEST(PipelineRun, MixedFloat16WaitsForEveryStagesCheckAndTheirAllReduce) {
  const std::string model = identicalLayers(8);
  RunRequest request = pipelineRequest(model, 4, 4, "1f1b");
  request.precision = "mixed_float16";
  request.overrides = {{"ici.link_latency_ns", "1000"}, {"ici.router_latency_ns", "0"}};
  const nlohmann::ordered_json p = runRequest(request).report["pipeline"];
  // A ring all-reduce of one f32 over the 4 stages: 2(p - 1)(alpha + (n/p)/beta), alpha 1 us,
  // n/p = 1 byte at 50 GB/s (20 ps), in cycles of 952 ps (1.05 GHz, the period rounded to ps).
  EXPECT_NEAR(p["loss_scale_all_reduce_cycles"].get<double>(), 6.0 * (1e6 + 20) / 952, 1.0);
  uint64_t max_check = 0, max_after = 0;
  for (const auto& stage : p["per_stage"]) {
    const uint64_t check = stage["loss_scale_check_cycles"].get<uint64_t>();
    EXPECT_GT(check, 0u);
    EXPECT_LT(check, stage["update_cycles"].get<uint64_t>());
    max_check = std::max(max_check, check);
    max_after = std::max(max_after, stage["update_cycles"].get<uint64_t>() - check);
  }
  // Under 1F1B the schedule ends with stage 0's last backward; every stage's gated update
  // starts after the slowest check and the all-reduce.
  const uint64_t schedule = p["schedule_cycles"].get<uint64_t>(), flags = p["loss_scale_all_reduce_cycles"];
  const uint64_t step = p["step_cycles"].get<uint64_t>();
  const uint64_t check0 = p["per_stage"][0]["loss_scale_check_cycles"].get<uint64_t>();
  EXPECT_GE(step + 2, schedule + check0 + flags + max_after);
  EXPECT_LE(step, schedule + max_check + flags + max_after + 2);
}

TEST(PipelineRun, MixedPrecisionKeepsTheShippedModelsLayers) {
  const std::vector<std::pair<std::string, size_t>> models = {
      {"mlp", 3}, {"bert_base", 102}, {"gpt2_small", 76}, {"resnet50", 107}};
  for (const auto& [name, count] : models) {
    const auto layersOf = [&](const std::string& precision) {
      RunRequest request;
      request.model_path = TPUSIM_SOURCE_DIR "/traces/" + name + ".onnx";
      request.batch = 2;
      request.precision = precision;
      return pipelineLayers(buildModelGraph(request).graph);
    };
    const std::vector<std::string> f32 = layersOf("float32");
    EXPECT_EQ(f32.size(), count) << name;
    EXPECT_EQ(layersOf("mixed_bfloat16"), f32) << name;
    EXPECT_EQ(layersOf("mixed_float16"), f32) << name;
  }
}

TEST(PipelineRun, BadInputsAreOneLineErrors) {
  const std::string model = identicalLayers(8);
  const auto errorOf = [](const RunRequest& request, ErrorKind kind) -> std::string {
    try {
      runRequest(request);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      return e.what();
    }
    return "";
  };
  RunRequest three = pipelineRequest(model, 3, 2, "1f1b");
  EXPECT_EQ(errorOf(three, ErrorKind::kInvalidConfig),
            "--pp 3 does not divide the 8 layers of tpusim_pipeline_8.onnx (a layer is a module with weights; "
            "docs/strategies.md)");
  RunRequest uneven = pipelineRequest(model, 2, 3, "1f1b");
  uneven.batch = 16;
  EXPECT_EQ(errorOf(uneven, ErrorKind::kInvalidConfig),
            "batch 16 does not divide into 3 micro-batches (--micro-batches)");
  EXPECT_EQ(errorOf(pipelineRequest(model, 2, 2, "zero_bubble"), ErrorKind::kInvalidConfig),
            "unknown pipeline schedule 'zero_bubble' (choose gpipe or 1f1b)");
  RunRequest tight = pipelineRequest(model, 2, 8, "gpipe");
  // 34,359,738 bytes: each stage's one-micro-batch plan fits (33,759,232 bytes for stage 0), eight
  // micro-batches of 262,144 activation bytes do not.
  tight.overrides.push_back({"hbm.capacity_gib", "0.032"});
  const std::string message = errorOf(tight, ErrorKind::kResource);
  EXPECT_EQ(message, "pipeline stage 0 needs 35594240 bytes of HBM (33759232 for one micro-batch + 7 more in flight x "
                     "262144 activation bytes) but tpuv4 has 34359738");
}

}  // namespace
}  // namespace tpusim
