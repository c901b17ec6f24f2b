// The extension `tpusim._core`, which the package tpusim (python/tpusim/__init__.py)
// re-exports: the library API of api/session.hpp, thin. tpusim.Error carries the
// same one-line message the CLI prints. Keep python/tpusim/_core.pyi in step.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/auto_distribute.hpp"
#include "api/compare_run.hpp"
#include "api/functional.hpp"
#include "api/progress.hpp"
#include "api/ps_run.hpp"
#include "api/reference_run.hpp"
#include "api/run_files.hpp"
#include "api/run_options.hpp"
#include "api/session.hpp"
#include "api/strategy.hpp"
#include "api/sweep.hpp"
#include "api/validation/validate.hpp"
#include "frontend/program_io.hpp"
#include "frontend/train/precision_policy.hpp"
#include "report/utilization_windows.hpp"
#include "sim/common/error.hpp"
#include "sim/common/log.hpp"
#include "sim/common/params.hpp"

namespace py = pybind11;

namespace {

// Python values in `overrides` may be ints, floats or strings; parameters take text.
std::string overrideText(const py::handle& value) {
  if (py::isinstance<py::bool_>(value))
    throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig, "parameter values cannot be booleans");
  return py::str(value);
}

// A keyword argument's value as a run option's (api/run_options.hpp checks its type).
tpusim::RunOptionValue runOptionValue(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    if (value.cast<py::int_>() < py::int_(0)) return value.cast<int64_t>();
    return value.cast<uint64_t>();
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig,
                      name + " takes a bool, int, float or str, not " + std::string(py::str(value.get_type())));
}

// The run options (api/run_options.hpp) given as keyword arguments of run(), compile(), ...
void applyTraining(tpusim::RunRequest& request, const py::kwargs& training) {
  for (const auto& [key, value] : training) {
    const std::string name = py::str(key);
    const tpusim::RunOption* option = tpusim::findRunOption(name);
    if (option == nullptr) {
      std::string known;
      for (const tpusim::RunOption& o : tpusim::runOptions()) known += (known.empty() ? "" : ", ") + o.name;
      throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig,
                          "unknown keyword argument '" + name + "' (run options, docs/run-options.md: " + known + ")");
    }
    tpusim::setRunOption(request, *option, runOptionValue(name, value), name);
  }
}

// The run options' table, for tools and the test that holds the CLI, this module and the docs to it.
py::list runOptionsTable() {
  py::list rows;
  for (const tpusim::RunOption& option : tpusim::runOptions()) {
    py::dict row;
    row["name"] = option.name;
    row["flag"] = "--" + tpusim::runOptionFlag(option);
    row["type"] = tpusim::runOptionTypeName(tpusim::runOptionType(option));
    row["group"] = option.group;
    row["scope"] = option.scope == tpusim::RunOptionScope::kRun ? "run" : "model";
    row["default"] = tpusim::runOptionDefault(option);
    row["unit"] = option.unit;
    row["choices"] = option.choices;
    row["doc"] = option.doc;
    rows.append(row);
  }
  return rows;
}

py::object jsonToPython(const nlohmann::ordered_json& json) {
  return py::module_::import("json").attr("loads")(json.dump());
}

nlohmann::ordered_json pythonToJson(const py::dict& dict) {
  return nlohmann::ordered_json::parse(py::str(py::module_::import("json").attr("dumps")(dict)).cast<std::string>());
}

// The request of a model function: the model, preset, mode, batch, overrides and keywords.
tpusim::RunRequest modelRequest(const std::string& path, const std::string& hw, std::optional<std::string> mode,
                                std::optional<int64_t> batch, const std::optional<py::dict>& overrides,
                                const py::kwargs& training) {
  tpusim::RunRequest request;
  applyTraining(request, training);
  request.model_path = path;
  request.hw = hw;
  request.mode = std::move(mode);
  request.batch = batch;
  if (overrides) {
    for (const auto& [key, value] : *overrides) request.overrides.emplace_back(py::str(key), overrideText(value));
  }
  return request;
}

// Ctrl-C while run() has released the GIL: the simulation reports its progress between windows
// of simulated time (about a millisecond of it each), and there the GIL is taken and Python's
// pending signals are run. A KeyboardInterrupt stops the simulation (as an Error through the
// simulator), and run() raises it once the GIL is back.
class InterruptibleProgress {
 public:
  explicit InterruptibleProgress(tpusim::ProgressCallback forward) : m_forward(std::move(forward)) {}
  tpusim::ProgressCallback callback() {
    return [this](const tpusim::SimProgress& progress) {
      if (m_forward) m_forward(progress);
      py::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        m_interrupted = true;
        throw tpusim::Error(tpusim::ErrorKind::kInternal, "interrupted");
      }
    };
  }
  bool interrupted() const { return m_interrupted; }

 private:
  tpusim::ProgressCallback m_forward;
  bool m_interrupted = false;
};

py::object run(const std::string& path, const std::string& hw, std::optional<std::string> mode,
               std::optional<int64_t> batch, std::optional<py::dict> overrides, std::optional<std::string> out,
               bool functional, bool instructions, bool progress, const py::kwargs& training) {
  tpusim::RunRequest request = modelRequest(path, hw, std::move(mode), batch, overrides, training);
  request.functional = functional;
  request.instruction_timeline = instructions;
  InterruptibleProgress interruptible(progress ? tpusim::progressTo(std::cerr, isatty(STDERR_FILENO) != 0)
                                               : tpusim::ProgressCallback{});
  request.progress = interruptible.callback();
  tpusim::RunOutcome outcome;
  try {
    py::gil_scoped_release release;
    outcome = tpusim::runRequest(request);
    if (out) tpusim::writeRunFiles(outcome, *out);
  } catch (const tpusim::Error&) {
    if (interruptible.interrupted()) throw py::error_already_set();  // the KeyboardInterrupt
    throw;
  }
  return jsonToPython(outcome.report);
}

// `tpusim compile`: the Program written to `output`, with its instruction count and the
// wall time of each compiler stage.
py::dict compile(const std::string& path, const std::string& output, const std::string& hw,
                 std::optional<std::string> mode, std::optional<int64_t> batch, std::optional<py::dict> overrides,
                 const py::kwargs& training) {
  if (!tpusim::isProgramPath(output)) {
    throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig,
                        "output must end in .tpuprog or .program.pb (binary), .tpuprog.txt or .pbtxt (text)");
  }
  const tpusim::RunRequest request = modelRequest(path, hw, std::move(mode), batch, overrides, training);
  std::vector<tpusim::PassTiming> timings;
  tpusim::program::Program program;
  {
    py::gil_scoped_release release;
    program = tpusim::compileRequest(request, tpusim::resolveHardware(request), &timings);
    tpusim::writeProgram(program, output);
  }
  py::dict result;
  result["path"] = output;
  result["chips"] = program.chips_size();
  result["instructions"] = program.chips(0).instructions_size();
  py::dict stages;
  for (const tpusim::PassTiming& timing : timings) stages[py::str(timing.name)] = timing.seconds;
  result["stage_seconds"] = stages;
  return result;
}

// `tpusim reference`: the reference backend's timed step as its report (written with
// its tensors to `out` when given, for compare()).
py::object referenceReport(const std::string& path, std::optional<std::string> out, const std::string& backend,
                           const std::string& numerics, int threads, int64_t replicas, int warmup, int repeats,
                           const std::string& hw, std::optional<std::string> mode, std::optional<int64_t> batch,
                           std::optional<py::dict> overrides, const py::kwargs& training) {
  tpusim::ReferenceRequest request;
  request.run = modelRequest(path, hw, std::move(mode), batch, overrides, training);
  request.backend = backend;
  request.numerics = numerics;
  request.run.threads = threads;
  request.replicas = replicas;
  request.timing.warmup = warmup;
  request.timing.repeats = repeats;
  tpusim::ReferenceOutcome outcome;
  {
    py::gil_scoped_release release;
    outcome = tpusim::runReferenceBackend(request);
    if (out) tpusim::writeReferenceFiles(outcome, *out);
  }
  return jsonToPython(outcome.report);
}

// `tpusim autodistribute`: the ranked plans of autodistribute.json, as a list of dicts (the
// files written to `out` when given). `progress` is called with each plan's dict as it is done.
py::object autodistribute(const std::string& path, const std::string& topology, const std::string& hw,
                          std::optional<int64_t> batch, std::optional<double> memory_limit_gib,
                          std::optional<std::vector<std::string>> precisions,
                          std::optional<std::vector<int64_t>> pp_degrees,
                          std::optional<std::vector<int64_t>> micro_batches,
                          std::optional<std::vector<std::string>> pipeline_schedules, int64_t max_plans,
                          std::optional<py::dict> overrides, std::optional<std::string> out,
                          std::optional<py::object> progress, int jobs, const py::kwargs& training) {
  tpusim::AutoDistributeRequest request;
  request.base = modelRequest(path, hw, std::nullopt, batch, overrides, training);
  if (!request.base.topology.empty()) {
    throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig,
                        "give the slice as topology=, the first argument after the model");
  }
  request.base.topology = topology;
  request.memory_limit_gib = memory_limit_gib;
  if (precisions) request.precisions = *precisions;
  request.pp_degrees = pp_degrees;
  if (micro_batches) request.micro_batches = *micro_batches;
  if (pipeline_schedules) request.pipeline_schedules = *pipeline_schedules;
  request.max_plans = max_plans;
  tpusim::PlanProgress report_progress;
  if (progress && !progress->is_none()) {
    report_progress = [&progress](const tpusim::PlanResult& plan, size_t index, size_t total) {
      py::gil_scoped_acquire acquire;
      (*progress)(plan.label, index, total);
    };
  }
  tpusim::AutoDistributeResult result;
  {
    py::gil_scoped_release release;
    result = *tpusim::autoDistributeOn(tpusim::LocalCaseRunner(jobs), request, tpusim::simulatingEvaluator(),
                                       report_progress);
    if (out) tpusim::writeAutoDistributeFiles(result, *out);
  }
  return jsonToPython(tpusim::autoDistributeJson(result)["plans"]);
}

// `tpusim sweep SPEC`: the rows of sweep.json, as a list of dicts (the files written to `out`
// when given). `spec` is a spec file's path or the spec as a dict (configs/sweep.proto's
// fields; relative paths from the working directory). `jobs` worker processes; `progress`
// is called with each case's row as it finishes.
py::object sweepSpec(const py::object& spec, int jobs, std::optional<std::string> out, bool reports,
                     std::optional<py::object> progress) {
  tpusim::config::SweepSpec message;
  std::string base_dir;
  if (py::isinstance<py::dict>(spec)) {
    message = tpusim::sweepSpecFromJson(pythonToJson(spec.cast<py::dict>()).dump());
  } else {
    const std::string path = py::str(spec);
    message = tpusim::readSweepSpec(path);
    base_dir = std::filesystem::path(path).parent_path().string();
  }
  const std::vector<tpusim::SweepCase> cases = tpusim::sweepCases(message, base_dir);
  const tpusim::LocalCaseRunner runner(jobs);
  tpusim::SweepProgress report_progress;
  if (progress && !progress->is_none()) {
    report_progress = [&progress](const nlohmann::ordered_json& row, size_t total) {
      py::gil_scoped_acquire acquire;
      (*progress)(jsonToPython(row), total);
    };
  }
  std::optional<tpusim::SweepResult> result;
  {
    py::gil_scoped_release release;
    result = tpusim::runSweep(cases, runner, reports && out.has_value(), report_progress);
    if (out) tpusim::writeSweepFiles(*result, *out);
  }
  return jsonToPython(tpusim::sweepJson(*result)["rows"]);
}

// Utilization over time per unit (report/utilization_windows.hpp) as numpy arrays.
py::dict utilizationTimeline(const py::dict& report) {
  const nlohmann::ordered_json json = pythonToJson(report);
  if (!tpusim::hasInstructionTimeline(json)) {
    throw tpusim::Error(tpusim::ErrorKind::kInvalidInput,
                        "the report has no instruction timeline (a run with instructions=False)");
  }
  const tpusim::UtilizationWindows windows = tpusim::utilizationWindows(json);
  const auto count = static_cast<py::ssize_t>(windows.windows());
  py::array_t<uint64_t> starts(count);
  for (py::ssize_t w = 0; w < count; ++w) starts.mutable_data()[w] = windows.windowStart(static_cast<size_t>(w));
  py::dict units;
  for (size_t u = 0; u < windows.units.size(); ++u) {
    py::array_t<double> utilization(count);
    for (py::ssize_t w = 0; w < count; ++w)
      utilization.mutable_data()[w] = windows.utilization(u, static_cast<size_t>(w));
    units[py::str(windows.units[u])] = utilization;
  }
  py::dict result;
  result["window_cycles"] = windows.window_cycles;
  result["start_cycle"] = starts;
  result["units"] = units;
  return result;
}

// numpy arrays in: float64, float32 or float16 for floating tensors (runReference converts
// each to its tensor's floating dtype), integers for labels.
tpusim::ir::TensorValue fromNumpy(const std::string& name, const py::array& array) {
  tpusim::ir::TensorValue value;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) value.shape.push_back(array.shape(i));
  const char kind = array.dtype().kind();
  if (kind == 'f') {
    const auto bytes = array.dtype().itemsize();
    value.dtype = bytes == 2 ? tpusim::DType::kF16 : bytes == 4 ? tpusim::DType::kF32 : tpusim::DType::kF64;
    const auto floats = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
    value.floats.assign(floats.data(), floats.data() + floats.size());
  } else if (kind == 'i' || kind == 'u') {
    value.dtype = tpusim::DType::kInt64;
    const auto ints = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    value.ints.assign(ints.data(), ints.data() + ints.size());
  } else {
    throw tpusim::Error(tpusim::ErrorKind::kInvalidInput, "feed '" + name + "' has numpy dtype kind '" +
                                                              std::string(1, kind) + "'; use float or integer arrays");
  }
  return value;
}

// numpy arrays out: float64 for f64 tensors, float32 for the other floating ones, int64.
py::array toNumpy(const tpusim::ir::TensorValue& value) {
  std::vector<py::ssize_t> shape(value.shape.begin(), value.shape.end());
  if (value.dtype == tpusim::DType::kF64) {
    py::array_t<double> out(shape);
    std::copy(value.floats.begin(), value.floats.end(), out.mutable_data());
    return out;
  }
  if (tpusim::ir::TensorValue::isFloating(value.dtype)) {
    py::array_t<float> out(shape);
    std::copy(value.floats.begin(), value.floats.end(), out.mutable_data());
    return out;
  }
  py::array_t<int64_t> out(shape);
  std::copy(value.ints.begin(), value.ints.end(), out.mutable_data());
  return out;
}

py::dict reference(const std::string& path, const py::dict& feeds, std::optional<std::string> mode,
                   std::optional<int64_t> batch, double learning_rate, int threads, const std::string& numerics,
                   const std::string& hw, std::optional<std::vector<std::string>> tensors, const py::kwargs& training) {
  tpusim::RunRequest request;
  applyTraining(request, training);
  request.model_path = path;
  request.mode = std::move(mode);
  request.batch = batch;
  request.learning_rate = learning_rate;
  std::map<std::string, tpusim::ir::TensorValue> values;
  for (const auto& [key, array] : feeds) {
    const std::string name = py::str(key);
    values[name] = fromNumpy(name, py::array::ensure(array));
  }
  if (numerics != "reference" && numerics != "mxu") {
    throw tpusim::Error(tpusim::ErrorKind::kInvalidConfig,
                        "unknown numerics '" + numerics + "' (choose reference or mxu)");
  }
  request.hw = hw;
  std::optional<tpusim::reference::MxuNumericsOptions> mxu;
  if (numerics == "mxu") mxu = tpusim::mxuNumericsOf(tpusim::resolveHardware(request), request);
  std::map<std::string, tpusim::ir::TensorValue> results;
  {
    py::gil_scoped_release release;
    results = tpusim::runReference(request, std::move(values), threads, mxu, tensors);
  }
  py::dict out;
  for (const auto& [name, value] : results) out[py::str(name)] = toNumpy(value);
  return out;
}

// tpusim validate: every case of a measurement file simulated; validate.json as a dict.
py::object validateCases(const std::string& cases, const std::string& hw, int jobs,
                         std::optional<std::vector<std::string>> families,
                         std::optional<std::pair<uint64_t, uint64_t>> part, std::optional<py::dict> overrides,
                         std::optional<std::string> out) {
  tpusim::ValidateRequest request;
  request.cases_path = cases;
  request.hw = hw;
  request.jobs = jobs;
  if (families) request.families = *families;
  if (part) std::tie(request.part, request.parts) = *part;
  if (overrides) {
    for (const auto& [key, value] : *overrides) request.overrides.emplace_back(py::str(key), overrideText(value));
  }
  const tpusim::ValidateResult result = tpusim::validate(request);
  if (out) tpusim::writeValidateFiles(result, *out);
  return jsonToPython(tpusim::validationJson(result.fits, result.cases, result.hardware, result.source));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "tpusim: a cycle-level TPU simulator";
  static py::exception<tpusim::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const tpusim::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.def("run_options", &runOptionsTable,
        "The run options run(), compile() and the other model functions take as keyword arguments, as "
        "tpusim run takes them as flags: a list of dicts with name, flag, type, group, scope (model: every "
        "model command; run: tpusim run and run() alone), default, unit, choices and doc (docs/run-options.md).");
  m.def("run", &run, py::arg("path"), py::arg("hw") = "tpuv4", py::arg("mode") = py::none(),
        py::arg("batch") = py::none(), py::arg("overrides") = py::none(), py::arg("out") = py::none(),
        py::arg("functional") = false, py::arg("instructions") = true, py::arg("progress") = true,
        "Simulate one step of a model (.onnx) or saved Program and return report.json as a dict; with `out`, write "
        "the run directory as tpusim run --out (functional=True adds the step's tensors, for compare). A run past "
        "a second shows its progress on stderr (a bar on a terminal, a line each 10 s otherwise) unless "
        "progress=False. Training "
        "keyword arguments: loss, optimizer, learning_rate, warmup_steps, momentum, nesterov, beta1, beta2, "
        "epsilon, weight_decay, adamw, micro_batches, remat (docs/frontend.md); also precision (float32, "
        "mixed_bfloat16, mixed_float16, int8 with mode='inference'), precision_rule, precision_rule_steps, "
        "matmul_precision, tiling_objective, topology, all_reduce_bucket_mib, dp, tp, pp (with micro_batches and "
        "pipeline_schedule), strategy, workers, steps, seed, threads (CPU threads of functional=True; the values "
        "do not depend on it).");
  m.def("compile", &compile, py::arg("path"), py::arg("output"), py::arg("hw") = "tpuv4", py::arg("mode") = py::none(),
        py::arg("batch") = py::none(), py::arg("overrides") = py::none(),
        "Compile a model for a preset and write its Program (.tpuprog binary, .tpuprog.txt text), as tpusim "
        "compile. Returns the path, chips, instructions and stage_seconds (each compiler stage's wall time). Takes "
        "run()'s keyword arguments.");
  m.def("reference_report", &referenceReport, py::arg("path"), py::arg("out") = py::none(), py::arg("backend") = "cpu",
        py::arg("numerics") = "reference", py::arg("threads") = 1, py::arg("replicas") = 1, py::arg("warmup") = 1,
        py::arg("repeats") = 3, py::arg("hw") = "tpuv4", py::arg("mode") = py::none(), py::arg("batch") = py::none(),
        py::arg("overrides") = py::none(),
        "Run one step on a reference backend (cpu, or cuda), timed per op, as tpusim reference; returns its "
        "report as a dict, written with the step's tensors to directory `out` when given (for compare). seed= "
        "sets the generated inputs, as run(functional=True, seed=...); replicas= runs data parallel over that many "
        "replicas (cpu: one after another; cuda: one GPU each).");
  m.def(
      "compare",
      [](const std::string& sim_report, const std::string& ref_report) {
        return jsonToPython(tpusim::compareReportFiles(sim_report, ref_report));
      },
      py::arg("sim_report"), py::arg("ref_report"),
      "Compare a simulation's report.json (run(out=..., functional=True)) with a reference backend's "
      "(reference_report(out=...)), per op and per output tensor, as tpusim compare; returns compare.json as a "
      "dict.");
  m.def("autodistribute", &autodistribute, py::arg("path"), py::arg("topology"), py::arg("hw") = "tpuv4",
        py::arg("batch") = py::none(), py::arg("memory_limit_gib") = py::none(), py::arg("precisions") = py::none(),
        py::arg("pp_degrees") = py::none(), py::arg("micro_batches") = py::none(),
        py::arg("pipeline_schedules") = py::none(), py::arg("max_plans") = tpusim::AutoDistributeRequest{}.max_plans,
        py::arg("overrides") = py::none(), py::arg("out") = py::none(), py::arg("progress") = py::none(),
        py::arg("jobs") = 1,
        "Search the data/tensor/pipeline-parallel degrees, micro-batches, remat and precision of a training step on "
        "the slice `topology` by simulation, as tpusim autodistribute; returns the ranked plans of "
        "autodistribute.json (written with its CSV to directory `out` when given). batch is the global batch; "
        "pp_degrees (default the chips' divisors up to 8), micro_batches (default 2, 4, 8) and pipeline_schedules "
        "(default 1f1b) the pipeline values searched; a space of more than max_plans plans is an error; "
        "progress(label, index, total) is called after each plan; jobs: worker processes evaluating the plans (the "
        "result does not depend on it). Takes run()'s training keyword arguments (not "
        "remat, precision, micro_batches or pipeline_schedule).");
  m.def("sweep_spec", &sweepSpec, py::arg("spec"), py::arg("jobs") = 1, py::arg("out") = py::none(),
        py::arg("reports") = false, py::arg("progress") = py::none(),
        "Run every case of a sweep spec (a .textproto path, or a dict of configs/sweep.proto's fields), as tpusim "
        "sweep; returns the rows of sweep.json, in case order (written with sweep.csv to directory `out` when "
        "given, and with reports=True each case's run directory under out/cases/). jobs: worker processes; the "
        "rows do not depend on it. progress(row, total) is called as each case finishes.");
  m.def("validate", &validateCases, py::arg("cases"), py::arg("hw") = "tpuv4", py::arg("jobs") = 1,
        py::arg("families") = py::none(), py::arg("part") = py::none(), py::arg("overrides") = py::none(),
        py::arg("out") = py::none(),
        "Simulate every case of a measurement file (docs/fidelity.md) as a one-op model on preset `hw`, as tpusim "
        "validate; returns validate.json as a dict (per-family errors and every case). jobs: worker processes; "
        "families: only these ops; part=(i, n): the cases whose index is i modulo n; out: a directory for "
        "validate.csv, validate.json and validate.html.");
  m.def("utilization_timeline", &utilizationTimeline, py::arg("report"),
        "Utilization over time per execution unit of a run's report: window_cycles, start_cycle (numpy array of "
        "each window's first cycle) and units (name to a numpy array of its utilization per window).");
  m.def(
      "check_precision_policy",
      [](const std::string& name) {
        return std::string(tpusim::precisionPolicyName(tpusim::parsePrecisionPolicy(name)));
      },
      py::arg("name"), "The precision policy's name if tpusim builds it; otherwise tpusim.Error.");
  m.def(
      "check_strategy", [](const std::string& name) { tpusim::strategyFromName(name); }, py::arg("name"),
      "Nothing if run(strategy=name) is built; otherwise tpusim.Error with the CLI's message.");
  m.def("reference", &reference, py::arg("path"), py::arg("feeds"), py::arg("mode") = py::none(),
        py::arg("batch") = py::none(), py::arg("learning_rate") = 0.01, py::arg("threads") = 1,
        py::arg("numerics") = "reference", py::arg("hw") = "tpuv4", py::arg("tensors") = py::none(),
        "Run one step of a model on the CPU reference executor. feeds: numpy arrays by input name (weights "
        "default to the model's; optimizer state to zeros, the step to 0). Returns every tensor's value by name, "
        "or with tensors=[names] only those (the others are released during the step: a CNN's every tensor is "
        "gigabytes); updated weights and states are '<name>:updated'. numerics='mxu' computes matmuls and "
        "convolutions as the "
        "MXUs of preset `hw` do (tpusim run --functional; matmul_precision= sets the f32 passes). Takes run()'s "
        "training keyword arguments.");
  tpusim::setLogLevel("warn");
  m.def("set_log_level", &tpusim::setLogLevel, py::arg("level"),
        "Log level on stderr: trace, debug, info, warn (default), error, critical or off.");
  m.def("presets", &tpusim::HardwareParams::presetNames, "Names of the built-in hardware presets.");
  m.def(
      "params",
      [](const std::string& preset) {
        const tpusim::HardwareParams hw = tpusim::HardwareParams::load(preset);
        py::dict out;
        for (const tpusim::ParamInfo& param : tpusim::HardwareParams::declarations()) {
          py::dict entry;
          entry["value"] = hw.valueText(param);
          entry["unit"] = param.unit;
          entry["doc"] = param.doc;
          entry["type"] = tpusim::paramTypeName(param.type);
          out[py::str(param.name)] = entry;
        }
        return out;
      },
      py::arg("preset"), "Every parameter of a preset: value (as text), unit, doc and type.");
}
