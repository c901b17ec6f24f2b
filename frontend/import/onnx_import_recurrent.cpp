// ONNX's recurrent layers, LSTM, GRU and RNN, unrolled over their static sequence into the
// ops a TPU runs for them: one matmul of the whole input sequence by W (every step at once, as
// XLA hoists it out of the loop), then per step one matmul of the hidden state by R and the
// gates' vector ops. Training differentiates the unrolled ops: backpropagation through time.
//
// The gate equations, bias and weight layouts are ONNX's (W, R and B in gate order iofc for
// LSTM, zrh for GRU; peepholes P in order iof). A batch entry whose sequence_lens is below the
// sequence length keeps its state, and outputs zeros, at the steps past its length: a mask per
// step selects between the new state and the old one. A reverse direction walks the steps from
// the last, so each entry starts at its own last step, as ONNX defines it.
#include <algorithm>
#include <cctype>
#include <map>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

enum class Cell { kLstm, kGru, kRnn };

struct Activation {
  std::string kind;  // lower case
  float alpha = 0;
  float beta = 0;
};

std::string lowerCase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// The activations of every direction, their alphas and betas consumed in order by the
// functions that take them (as onnxruntime reads the lists), ONNX's defaults otherwise.
std::vector<Activation> activations(const onnx::NodeProto& node, const std::string& label, Cell cell, int directions) {
  const std::vector<std::string> defaults = cell == Cell::kLstm  ? std::vector<std::string>{"sigmoid", "tanh", "tanh"}
                                            : cell == Cell::kGru ? std::vector<std::string>{"sigmoid", "tanh"}
                                                                 : std::vector<std::string>{"tanh"};
  std::vector<std::string> names;
  if (const auto* attr = attribute(node, "activations")) {
    for (const auto& given : attr->strings()) names.push_back(lowerCase(given));
  }
  if (names.empty()) names = defaults;
  if (names.size() == defaults.size() && directions == 2) {
    const std::vector<std::string> one_direction = names;  // the reverse direction's are the same
    names.insert(names.end(), one_direction.begin(), one_direction.end());
  }
  if (names.size() != defaults.size() * static_cast<size_t>(directions)) {
    invalid(label + ": 'activations' lists " + std::to_string(names.size()) + " functions, expected " +
            std::to_string(defaults.size() * static_cast<size_t>(directions)));
  }
  std::vector<float> alphas, betas;
  if (const auto* attr = attribute(node, "activation_alpha"))
    alphas.assign(attr->floats().begin(), attr->floats().end());
  if (const auto* attr = attribute(node, "activation_beta")) betas.assign(attr->floats().begin(), attr->floats().end());
  size_t next_alpha = 0, next_beta = 0;
  const auto take = [](const std::vector<float>& list, size_t& next, float fallback) {
    return next < list.size() ? list[next++] : fallback;
  };
  // The default alpha and beta of each function that takes them (ONNX's operator defaults).
  const std::map<std::string, std::pair<float, float>> with_alpha = {
      {"leakyrelu", {0.01f, 0}}, {"thresholdedrelu", {1.0f, 0}}, {"elu", {1.0f, 0}}};
  const std::map<std::string, std::pair<float, float>> with_both = {
      {"hardsigmoid", {0.2f, 0.5f}}, {"affine", {1.0f, 0.0f}}, {"scaledtanh", {1.0f, 1.0f}}};
  std::vector<Activation> result;
  for (const std::string& kind : names) {
    Activation activation{kind, 0, 0};
    if (const auto it = with_alpha.find(kind); it != with_alpha.end()) {
      activation.alpha = take(alphas, next_alpha, it->second.first);
    } else if (const auto both = with_both.find(kind); both != with_both.end()) {
      activation.alpha = take(alphas, next_alpha, both->second.first);
      activation.beta = take(betas, next_beta, both->second.second);
    } else if (kind != "sigmoid" && kind != "tanh" && kind != "relu" && kind != "softsign" && kind != "softplus") {
      throw Error(ErrorKind::kUnsupported, label + ": activation '" + kind + "' is not supported");
    }
    result.push_back(activation);
  }
  return result;
}

}  // namespace

void Importer::importRecurrent(const onnx::NodeProto& node, const std::string& label) {
  const Cell cell = node.op_type() == "LSTM" ? Cell::kLstm : node.op_type() == "GRU" ? Cell::kGru : Cell::kRnn;
  expectInputCount(node, 3, cell == Cell::kLstm ? 8 : 6, label);
  std::set<std::string> known = {"activation_alpha", "activation_beta", "activations", "clip",
                                 "direction",        "hidden_size",     "layout"};
  if (cell == Cell::kLstm) known.insert("input_forget");
  if (cell == Cell::kGru) known.insert("linear_before_reset");
  rejectAttributesExcept(node, known);
  if (node.output_size() > (cell == Cell::kLstm ? 3 : 2)) invalid(label + " has too many outputs");
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const auto optional = [&](int index) {
    return node.input_size() > index && !node.input(index).empty() ? value(node.input(index), label) : -1;
  };

  const int64_t layout = intAttribute(node, "layout", 0);
  if (layout != 0 && layout != 1) invalid(label + ": layout must be 0 or 1");
  int x = value(node.input(0), label);
  const DType dtype = g.tensor(x).dtype;
  if (!isFloatingDType(dtype)) invalid(label + ": " + node.op_type() + " needs a float input");
  if (g.tensor(x).shape.size() != 3) invalid(label + ": X must be [sequence, batch, input]");
  if (layout == 1) x = g.transpose(name + ".time_major", x, {1, 0, 2});
  const int64_t steps = g.tensor(x).shape[0], batch = g.tensor(x).shape[1], features = g.tensor(x).shape[2];

  const std::string direction = attribute(node, "direction") ? attribute(node, "direction")->s() : "forward";
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    invalid(label + ": direction '" + direction + "' is not forward, reverse or bidirectional");
  }
  const int directions = direction == "bidirectional" ? 2 : 1;
  const int64_t gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  const int w = value(node.input(1), label), r = value(node.input(2), label);
  const ir::Shape& r_shape = g.tensor(r).shape;
  if (r_shape.size() != 3) invalid(label + ": R must be [directions, gates x hidden, hidden]");
  const int64_t hidden = r_shape[2];
  if (attribute(node, "hidden_size") && intAttribute(node, "hidden_size", 0) != hidden) {
    invalid(label + ": hidden_size differs from R's shape " + ir::shapeToString(r_shape));
  }
  const auto expectShape = [&](int tensor, const ir::Shape& shape, const char* what) {
    if (tensor >= 0 && g.tensor(tensor).shape != shape) {
      invalid(label + ": " + what + " has shape " + ir::shapeToString(g.tensor(tensor).shape) + ", expected " +
              ir::shapeToString(shape));
    }
    if (tensor >= 0 && std::string(what) != "sequence_lens" && g.tensor(tensor).dtype != dtype) {
      invalid(label + ": " + what + " has another type than X");
    }
  };
  expectShape(w, {directions, gates * hidden, features}, "W");
  expectShape(r, {directions, gates * hidden, hidden}, "R");
  const int b = optional(3);
  expectShape(b, {directions, 2 * gates * hidden}, "B");
  const int lengths = optional(4);
  expectShape(lengths, {batch}, "sequence_lens");
  const ir::Shape state_shape =
      layout == 1 ? ir::Shape{batch, directions, hidden} : ir::Shape{directions, batch, hidden};
  const auto initialState = [&](int index, const char* what) {
    int state = optional(index);
    expectShape(state, state_shape, what);
    if (state >= 0 && layout == 1) state = g.transpose(name + "." + what + ".direction_major", state, {1, 0, 2});
    return state;
  };
  const int h0 = initialState(5, "initial_h");
  const int c0 = cell == Cell::kLstm ? initialState(6, "initial_c") : -1;
  const int peepholes = cell == Cell::kLstm ? optional(7) : -1;
  expectShape(peepholes, {directions, 3 * hidden}, "P");
  const std::vector<Activation> functions = activations(node, label, cell, directions);
  const auto* clip_attr = attribute(node, "clip");
  const float clip = clip_attr ? clip_attr->f() : 0.0f;
  if (clip_attr && !(clip > 0)) invalid(label + ": clip must be positive");
  const bool couple_input_forget = cell == Cell::kLstm && intAttribute(node, "input_forget", 0) != 0;
  const bool linear_before_reset = cell == Cell::kGru && intAttribute(node, "linear_before_reset", 0) != 0;

  // Masks are needed unless every length is known to be the whole sequence.
  bool masked = lengths >= 0;
  if (lengths >= 0) {
    if (g.tensor(lengths).dtype != DType::kInt32) invalid(label + ": sequence_lens must be int32");
    if (const ir::TensorValue* known_lengths = constantValue(node.input(4))) {
      for (const int64_t length : known_lengths->ints) {
        if (length < 0 || length > steps) invalid(label + ": a sequence length is outside [0, sequence]");
      }
      masked = std::any_of(known_lengths->ints.begin(), known_lengths->ints.end(),
                           [&](int64_t length) { return length != steps; });
    }
  }

  std::map<std::string, int> constants;  // one of each per node
  const auto constant = [&](const std::string& part, float v) {
    const auto it = constants.find(part);
    if (it != constants.end()) return it->second;
    return constants[part] = scalarConstant(name + "." + part, dtype, v);
  };
  const auto apply = [&](const Activation& f, const std::string& at, int in) {
    const auto line = [&](int v, float alpha, float beta) {
      return g.add(at + ".line", g.scale(at + ".slope", v, alpha), constant("beta" + std::to_string(beta), beta));
    };
    if (f.kind == "sigmoid") return g.unary(ir::UnaryKind::kSigmoid, at, in);
    if (f.kind == "tanh") return g.unary(ir::UnaryKind::kTanh, at, in);
    if (f.kind == "relu") return g.relu(at, in);
    if (f.kind == "leakyrelu") return g.unary(ir::UnaryKind::kLeakyRelu, at, in, f.alpha);
    if (f.kind == "elu") return g.unary(ir::UnaryKind::kElu, at, in, f.alpha);
    if (f.kind == "thresholdedrelu") {
      const int above = g.compare(ir::CompareDirection::kGt, at + ".above", in,
                                  constant("threshold" + std::to_string(f.alpha), f.alpha));
      return g.where(at, above, in, constant("zero", 0));
    }
    if (f.kind == "softsign") {
      const int abs = g.unary(ir::UnaryKind::kAbs, at + ".abs", in);
      return g.binary(ir::OpType::kDiv, at, in, g.add(at + ".denominator", abs, constant("one", 1)));
    }
    if (f.kind == "softplus") {
      const int exp = g.unary(ir::UnaryKind::kExp, at + ".exp", in);
      return g.unary(ir::UnaryKind::kLog, at, g.add(at + ".plus_one", exp, constant("one", 1)));
    }
    if (f.kind == "hardsigmoid") {
      const int capped = g.binary(ir::OpType::kMinimum, at + ".capped", line(in, f.alpha, f.beta), constant("one", 1));
      return g.binary(ir::OpType::kMaximum, at, capped, constant("zero", 0));
    }
    if (f.kind == "affine") return line(in, f.alpha, f.beta);
    // scaledtanh: alpha tanh(beta x)
    return g.scale(at, g.unary(ir::UnaryKind::kTanh, at + ".tanh", g.scale(at + ".inner", in, f.beta)), f.alpha);
  };
  const auto clipped = [&](const std::string& at, int v) {
    if (!clip_attr) return v;
    const int low = g.binary(ir::OpType::kMaximum, at + ".clip_low", v, constant("minus_clip", -clip));
    return g.binary(ir::OpType::kMinimum, at + ".clipped", low, constant("clip", clip));
  };
  const auto columns = [&](const std::string& at, int v, int64_t first, int64_t count) {
    return g.slice(at, v, 1, first, count, ir::TensorRole::kActivation);
  };
  const auto ofDirection = [&](const std::string& at, int v, int d, ir::Shape shape) {
    return g.reshape(at, g.slice(at + ".slice", v, 0, d, 1, ir::TensorRole::kActivation), std::move(shape));
  };
  const auto mul = [&](const std::string& at, int a, int c) { return g.binary(ir::OpType::kMul, at, a, c); };

  std::vector<int> outputs, final_h, final_c;
  const size_t per_direction = functions.size() / static_cast<size_t>(directions);
  for (int d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const std::string dn = name + (directions == 2 ? (d == 0 ? ".forward" : ".backward") : "");
    const Activation* f = &functions[static_cast<size_t>(d) * per_direction];
    const int wd = ofDirection(dn + ".W", w, d, {gates * hidden, features});
    const int rd = ofDirection(dn + ".R", r, d, {gates * hidden, hidden});
    // The input's share of every gate, at every step: one [steps x batch, gates x hidden] matmul.
    int projected =
        g.matmul(dn + ".input_projection", g.reshape(dn + ".inputs", x, {steps * batch, features}), wd, false, true);
    int recurrent_bias = -1;  // GRU's Rb, which linear_before_reset keeps inside the reset gate
    if (b >= 0) {
      const int bd = ofDirection(dn + ".B", b, d, {2 * gates * hidden});
      const int wb = g.slice(dn + ".Wb", bd, 0, 0, gates * hidden, ir::TensorRole::kActivation);
      const int rb = g.slice(dn + ".Rb", bd, 0, gates * hidden, gates * hidden, ir::TensorRole::kActivation);
      if (cell == Cell::kGru) {
        projected = g.add(dn + ".input_bias", projected, wb);
        recurrent_bias = rb;
      } else {
        projected = g.add(dn + ".input_bias", projected, g.add(dn + ".bias", wb, rb));
      }
    }
    projected = g.reshape(dn + ".per_step", projected, {steps, batch, gates * hidden});
    const auto zeroState = [&](const char* what) {
      const std::string part = dn + "." + what;
      const int id = g.addConstant(part, {batch, hidden}, dtype);
      m_result.initializers.emplace(part, ir::TensorValue::zeros({batch, hidden}, dtype));
      return id;
    };
    int h = h0 >= 0 ? ofDirection(dn + ".h0", h0, d, {batch, hidden}) : zeroState("h0");
    int c = cell != Cell::kLstm ? -1 : c0 >= 0 ? ofDirection(dn + ".c0", c0, d, {batch, hidden}) : zeroState("c0");
    int pi = -1, po = -1, pf = -1;
    if (peepholes >= 0) {
      const int pd = ofDirection(dn + ".P", peepholes, d, {3 * hidden});
      pi = g.slice(dn + ".Pi", pd, 0, 0, hidden, ir::TensorRole::kActivation);
      po = g.slice(dn + ".Po", pd, 0, hidden, hidden, ir::TensorRole::kActivation);
      pf = g.slice(dn + ".Pf", pd, 0, 2 * hidden, hidden, ir::TensorRole::kActivation);
    }
    int r_update_reset = -1, r_hidden = -1, rb_update_reset = -1, rb_hidden = -1;
    if (cell == Cell::kGru) {
      r_update_reset = g.slice(dn + ".Rzr", rd, 0, 0, 2 * hidden, ir::TensorRole::kActivation);
      r_hidden = g.slice(dn + ".Rh", rd, 0, 2 * hidden, hidden, ir::TensorRole::kActivation);
      if (recurrent_bias >= 0) {
        rb_update_reset = g.slice(dn + ".Rbzr", recurrent_bias, 0, 0, 2 * hidden, ir::TensorRole::kActivation);
        rb_hidden = g.slice(dn + ".Rbh", recurrent_bias, 0, 2 * hidden, hidden, ir::TensorRole::kActivation);
      }
    }
    int zero_output = -1;
    std::vector<int> ys(static_cast<size_t>(steps));
    for (int64_t k = 0; k < steps; ++k) {
      const int64_t t = reverse ? steps - 1 - k : k;
      const std::string at = dn + ".t" + std::to_string(t);
      const int xt = g.reshape(at + ".x", g.slice(at + ".x_slice", projected, 0, t, 1, ir::TensorRole::kActivation),
                               {batch, gates * hidden});
      int h_new = -1, c_new = -1;
      if (cell == Cell::kLstm) {
        const int pre = g.add(at + ".gates", xt, g.matmul(at + ".recurrent", h, rd, false, true));
        int i = columns(at + ".i_in", pre, 0, hidden), o = columns(at + ".o_in", pre, hidden, hidden);
        int fg = columns(at + ".f_in", pre, 2 * hidden, hidden), cand = columns(at + ".c_in", pre, 3 * hidden, hidden);
        if (pi >= 0) i = g.add(at + ".i_peep", i, mul(at + ".i_peephole", pi, c));
        if (pf >= 0) fg = g.add(at + ".f_peep", fg, mul(at + ".f_peephole", pf, c));
        i = apply(f[0], at + ".i", clipped(at + ".i", i));
        fg = couple_input_forget ? g.binary(ir::OpType::kSub, at + ".f", constant("one", 1), i)
                                 : apply(f[0], at + ".f", clipped(at + ".f", fg));
        cand = apply(f[1], at + ".c_candidate", clipped(at + ".c_candidate", cand));
        c_new = g.add(at + ".c", mul(at + ".kept", fg, c), mul(at + ".written", i, cand));
        if (po >= 0) o = g.add(at + ".o_peep", o, mul(at + ".o_peephole", po, c_new));
        o = apply(f[0], at + ".o", clipped(at + ".o", o));
        h_new = mul(at + ".h", o, apply(f[2], at + ".c_out", c_new));
      } else if (cell == Cell::kGru) {
        int hr = g.matmul(at + ".recurrent_zr", h, r_update_reset, false, true);
        if (rb_update_reset >= 0) hr = g.add(at + ".recurrent_zr_bias", hr, rb_update_reset);
        const int zr = g.add(at + ".zr_in", columns(at + ".x_zr", xt, 0, 2 * hidden), hr);
        const int z = apply(f[0], at + ".z", clipped(at + ".z", columns(at + ".z_in", zr, 0, hidden)));
        const int reset = apply(f[0], at + ".r", clipped(at + ".r", columns(at + ".r_in", zr, hidden, hidden)));
        int recurrent = -1;
        if (linear_before_reset) {
          int hh = g.matmul(at + ".recurrent_h", h, r_hidden, false, true);
          if (rb_hidden >= 0) hh = g.add(at + ".recurrent_h_bias", hh, rb_hidden);
          recurrent = mul(at + ".reset", reset, hh);
        } else {
          recurrent = g.matmul(at + ".recurrent_h", mul(at + ".reset", reset, h), r_hidden, false, true);
          if (rb_hidden >= 0) recurrent = g.add(at + ".recurrent_h_bias", recurrent, rb_hidden);
        }
        const int n_in = g.add(at + ".n_in", columns(at + ".x_h", xt, 2 * hidden, hidden), recurrent);
        const int n = apply(f[1], at + ".n", clipped(at + ".n", n_in));
        const int keep_new = g.binary(ir::OpType::kSub, at + ".one_minus_z", constant("one", 1), z);
        h_new = g.add(at + ".h", mul(at + ".new_share", keep_new, n), mul(at + ".old_share", z, h));
      } else {
        const int pre = g.add(at + ".in", xt, g.matmul(at + ".recurrent", h, rd, false, true));
        h_new = apply(f[0], at + ".h", clipped(at + ".h", pre));
      }
      if (masked) {
        const DType length_type = g.tensor(lengths).dtype;
        const int step = g.addConstant(at + ".step", {}, length_type);
        m_result.initializers.emplace(at + ".step", ir::TensorValue{{}, length_type, {}, {t}});
        const int running = g.reshape(
            at + ".running", g.compare(ir::CompareDirection::kLt, at + ".in_sequence", step, lengths), {batch, 1});
        if (zero_output < 0) zero_output = constant("zero", 0);
        ys[static_cast<size_t>(t)] = g.where(at + ".y", running, h_new, zero_output);
        h = g.where(at + ".h_kept", running, h_new, h);
        if (c >= 0) c = g.where(at + ".c_kept", running, c_new, c);
      } else {
        ys[static_cast<size_t>(t)] = h = h_new;
        c = c_new;
      }
    }
    if (node.output_size() > 0 && !node.output(0).empty()) {
      std::vector<int> rows;
      for (int64_t t = 0; t < steps; ++t) {
        rows.push_back(g.reshape(dn + ".y" + std::to_string(t), ys[static_cast<size_t>(t)], {1, 1, batch, hidden}));
      }
      outputs.push_back(rows.size() == 1 ? rows[0] : g.concat(dn + ".Y", rows, 0));
    }
    final_h.push_back(g.reshape(dn + ".Y_h", h, {1, batch, hidden}));
    if (c >= 0) final_c.push_back(g.reshape(dn + ".Y_c", c, {1, batch, hidden}));
  }
  // Y [steps, directions, batch, hidden] and the final states [directions, batch, hidden]; layout 1
  // puts the batch first in each.
  const auto joined = [&](const std::string& part, const std::vector<int>& parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : g.concat(name + "." + part, parts, axis);
  };
  const auto emit = [&](int index, int tensor, std::vector<int64_t> batch_major) {
    if (node.output_size() <= index || node.output(index).empty()) return;
    defineOutput(node, index,
                 layout == 1 ? g.transpose(name + ".out" + std::to_string(index), tensor, std::move(batch_major))
                             : g.reshape(name + ".out" + std::to_string(index), tensor, g.tensor(tensor).shape));
  };
  if (!outputs.empty()) emit(0, joined("Y", outputs, 1), {2, 0, 1, 3});
  emit(1, joined("Y_h", final_h, 0), {1, 0, 2});
  if (cell == Cell::kLstm) emit(2, joined("Y_c", final_c, 0), {1, 0, 2});
}

}  // namespace tpusim::onnx_detail
