// The Python module `tpusim`: the library API of api/session.hpp, thin.
// tpusim.Error carries the same one-line message the CLI prints.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>

#include "api/session.hpp"
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

py::object run(const std::string& path, const std::string& hw, std::optional<std::string> mode,
               std::optional<int64_t> batch, std::optional<py::dict> overrides) {
  tpusim::RunRequest request;
  request.model_path = path;
  request.hw = hw;
  request.mode = std::move(mode);
  request.batch = batch;
  if (overrides) {
    for (const auto& [key, value] : *overrides) request.overrides.emplace_back(py::str(key), overrideText(value));
  }
  tpusim::RunOutcome outcome;
  {
    py::gil_scoped_release release;
    outcome = tpusim::runRequest(request);
  }
  return py::module_::import("json").attr("loads")(outcome.report.dump());
}

}  // namespace

PYBIND11_MODULE(tpusim, m) {
  m.doc() = "tpusim: a cycle-level TPU simulator";
  static py::exception<tpusim::Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const tpusim::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.def("run", &run, py::arg("path"), py::arg("hw") = "tpuv4", py::arg("mode") = py::none(),
        py::arg("batch") = py::none(), py::arg("overrides") = py::none(),
        "Simulate one step of a model (.onnx) or saved Program and return report.json as a dict.");
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
