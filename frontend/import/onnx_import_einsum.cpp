// Einsum as the ops a TPU compiler lowers it to. Each operand first loses its repeated labels (a
// diagonal: the two dimensions flattened and a Gather of the diagonal's positions) and the
// labels no other operand and not the output name (a Reduce sum). The operands then combine
// left to right, two at a time, into one batched MatMul: the labels both share and a later
// operand or the output needs are its batch dimensions, those both share and nothing later
// needs are contracted, and each side's own labels are its rows or columns. A Transpose puts
// the result in the output's order. Without "->" the output is the labels that occur once,
// in alphabetical order, after the ellipsis' dimensions (ONNX's implicit mode). An ellipsis'
// dimensions broadcast, right-aligned, as numpy's einsum.
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

struct Term {
  int tensor = -1;
  std::string labels;  // one per dimension; an ellipsis' dimensions are the digits '0'.. in order
};

// The labels of each operand, and of the output, with an ellipsis replaced by digits for its dimensions.
void parseEquation(const std::string& given, const std::vector<size_t>& ranks, const std::string& label,
                   std::vector<std::string>& operands, std::string& output) {
  std::string equation;
  for (char c : given) {
    if (c != ' ') equation += c;
  }
  const size_t arrow = equation.find("->");
  const std::string inputs = equation.substr(0, arrow);
  std::vector<std::string> raw;
  size_t start = 0;
  for (size_t comma = inputs.find(',');; comma = inputs.find(',', start)) {
    raw.push_back(inputs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (raw.size() != ranks.size()) {
    invalid(label + ": the equation names " + std::to_string(raw.size()) + " operands, the node has " +
            std::to_string(ranks.size()));
  }
  size_t ellipsis_dims = 0;
  const auto expand = [&](const std::string& term, size_t rank, bool is_output) {
    const size_t dots = term.find("...");
    std::string letters = term;
    if (dots != std::string::npos) letters.erase(dots, 3);
    for (char c : letters) {
      if (!std::isalpha(static_cast<unsigned char>(c))) invalid(label + ": '" + std::string(1, c) + "' is not a label");
    }
    if (dots == std::string::npos) {
      if (!is_output && letters.size() != rank) {
        invalid(label + ": term '" + term + "' has " + std::to_string(letters.size()) + " labels for rank " +
                std::to_string(rank));
      }
      return letters;
    }
    if (!is_output && letters.size() > rank) invalid(label + ": term '" + term + "' has more labels than dimensions");
    const size_t count = is_output ? ellipsis_dims : rank - letters.size();
    std::string digits;
    for (size_t j = 0; j < count; ++j) digits += static_cast<char>('0' + (ellipsis_dims - count + j));
    return term.substr(0, dots) + digits + term.substr(dots + 3);
  };
  for (size_t i = 0; i < raw.size(); ++i) {
    const size_t dots = raw[i].find("...");
    if (dots != std::string::npos) ellipsis_dims = std::max(ellipsis_dims, ranks[i] - (raw[i].size() - 3));
  }
  if (ellipsis_dims > 10) throw Error(ErrorKind::kUnsupported, label + ": an ellipsis of more than 10 dimensions");
  for (size_t i = 0; i < raw.size(); ++i) operands.push_back(expand(raw[i], ranks[i], false));
  if (arrow != std::string::npos) {
    output = expand(equation.substr(arrow + 2), 0, true);
    return;
  }
  // Implicit: the ellipsis' dimensions, then the letters that occur once, alphabetically.
  std::map<char, int> count;
  for (const std::string& term : operands) {
    for (char c : term) ++count[c];
  }
  for (size_t j = 0; j < ellipsis_dims; ++j) output += static_cast<char>('0' + j);
  for (const auto& [c, n] : count) {
    if (std::isalpha(static_cast<unsigned char>(c)) && n == 1) output += c;
  }
}

}  // namespace

void Importer::importEinsum(const onnx::NodeProto& node, const std::string& label) {
  expectInputCount(node, 1, std::numeric_limits<int>::max(), label);
  rejectAttributesExcept(node, {"equation"});
  if (!attribute(node, "equation")) invalid(label + ": Einsum needs an equation");
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  std::vector<Term> terms;
  std::vector<size_t> ranks;
  for (const auto& input : node.input()) {
    const int tensor = value(input, label);
    if (!isFloatingDType(g.tensor(tensor).dtype)) {
      throw Error(ErrorKind::kUnsupported, label + ": Einsum of non-float operands is not supported");
    }
    terms.push_back({tensor, ""});
    ranks.push_back(g.tensor(tensor).shape.size());
  }
  std::vector<std::string> labels;
  std::string output;
  parseEquation(attribute(node, "equation")->s(), ranks, label, labels, output);
  for (size_t i = 0; i < terms.size(); ++i) terms[i].labels = labels[i];
  std::map<char, int64_t> sizes;  // each label's size (1 where it broadcasts)
  for (const Term& term : terms) {
    for (size_t d = 0; d < term.labels.size(); ++d) {
      const int64_t size = g.tensor(term.tensor).shape[d];
      int64_t& known = sizes[term.labels[d]];
      if (known > 1 && size > 1 && known != size)
        invalid(label + ": label '" + std::string(1, term.labels[d]) + "' has sizes " + std::to_string(known) +
                " and " + std::to_string(size));
      known = std::max(known, size);
    }
  }
  for (char c : output) {
    if (!sizes.count(c)) invalid(label + ": output label '" + std::string(1, c) + "' names no operand's dimension");
  }
  int step = 0;
  const auto part = [&](const std::string& what) { return name + "." + what + std::to_string(step++); };
  // Moves term's dimensions into the order of `order` (a permutation of its labels).
  const auto arranged = [&](Term t, const std::string& order) {
    if (order == t.labels) return t;
    std::vector<int64_t> perm;
    for (char c : order) perm.push_back(static_cast<int64_t>(t.labels.find(c)));
    t.tensor = g.transpose(part("transpose"), t.tensor, perm);
    t.labels = order;
    return t;
  };
  const auto neededBeyond = [&](size_t first_other, char c) {
    if (output.find(c) != std::string::npos) return true;
    for (size_t j = first_other; j < terms.size(); ++j) {
      if (terms[j].labels.find(c) != std::string::npos) return true;
    }
    return false;
  };

  // Per operand: diagonals, then the sums of labels nothing else names.
  for (size_t i = 0; i < terms.size(); ++i) {
    Term& t = terms[i];
    for (size_t p = 0; p < t.labels.size(); ++p) {
      const size_t q = t.labels.find(t.labels[p], p + 1);
      if (q == std::string::npos) continue;
      std::string order;
      for (size_t d = 0; d < t.labels.size(); ++d) {
        if (d != p && d != q) order += t.labels[d];
      }
      const char c = t.labels[p];
      std::vector<int64_t> perm;
      for (size_t d = 0; d < t.labels.size(); ++d) {
        if (d != p && d != q) perm.push_back(static_cast<int64_t>(d));
      }
      perm.push_back(static_cast<int64_t>(p));
      perm.push_back(static_cast<int64_t>(q));
      const int64_t n = g.tensor(t.tensor).shape[p];
      if (g.tensor(t.tensor).shape[q] != n) invalid(label + ": a diagonal of unequal dimensions");
      ir::Shape flat = g.tensor(t.tensor).shape;
      flat.erase(flat.begin() + static_cast<int64_t>(q));
      flat.erase(flat.begin() + static_cast<int64_t>(p));
      flat.push_back(n * n);
      ir::TensorValue positions{{n}, DType::kInt64, {}, {}};
      for (int64_t k = 0; k < n; ++k) positions.ints.push_back(k * n + k);
      const int square = g.reshape(part("square"), g.transpose(part("diagonal_last"), t.tensor, perm), flat);
      t.tensor = g.gather(part("diagonal"), square, constantTensor(part("diagonal_positions"), std::move(positions)),
                          static_cast<int64_t>(flat.size()) - 1);
      t.labels = order + c;
      p = static_cast<size_t>(-1);  // start over: the labels moved
    }
    std::vector<int64_t> summed;
    std::string kept;
    for (size_t d = 0; d < t.labels.size(); ++d) {
      const char c = t.labels[d];
      bool elsewhere = neededBeyond(terms.size(), c);
      for (size_t j = 0; j < terms.size(); ++j) {
        elsewhere = elsewhere || (j != i && terms[j].labels.find(c) != std::string::npos);
      }
      if (elsewhere) {
        kept += c;
      } else {
        summed.push_back(static_cast<int64_t>(d));
      }
    }
    if (!summed.empty()) {
      t.tensor = g.reduce(part("sum"), t.tensor, ir::Reduction::kSum, summed, false);
      t.labels = kept;
    }
  }

  // Left to right, two at a time, as one batched MatMul.
  Term result = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    const Term& other = terms[i];
    std::string batch, rows, contracted, columns;
    for (char c : result.labels) {
      if (other.labels.find(c) == std::string::npos) {
        rows += c;
      } else if (neededBeyond(i + 1, c)) {
        batch += c;
      } else {
        contracted += c;
      }
    }
    for (char c : other.labels) {
      if (result.labels.find(c) == std::string::npos) columns += c;
    }
    const Term a = arranged(result, batch + rows + contracted);
    const Term b = arranged(other, batch + contracted + columns);
    const ir::Shape a_dims = g.tensor(a.tensor).shape, b_dims = g.tensor(b.tensor).shape;
    const auto extent = [](const ir::Shape& dims, size_t from, size_t count) {
      int64_t product = 1;
      for (size_t d = from; d < from + count; ++d) product *= dims[d];
      return product;
    };
    const auto batch_end = static_cast<int64_t>(batch.size());
    ir::Shape a_shape(a_dims.begin(), a_dims.begin() + batch_end), b_shape(b_dims.begin(), b_dims.begin() + batch_end);
    a_shape.push_back(extent(a_dims, batch.size(), rows.size()));
    a_shape.push_back(extent(a_dims, batch.size() + rows.size(), contracted.size()));
    b_shape.push_back(extent(b_dims, batch.size(), contracted.size()));
    b_shape.push_back(extent(b_dims, batch.size() + contracted.size(), columns.size()));
    if (a_shape[a_shape.size() - 1] != b_shape[b_shape.size() - 2]) {
      invalid(label + ": contracted labels '" + contracted + "' differ in size");
    }
    const int product = g.matmul(part("product"), g.reshape(part("lhs"), a.tensor, a_shape),
                                 g.reshape(part("rhs"), b.tensor, b_shape), false, false);
    ir::Shape out(g.tensor(product).shape.begin(), g.tensor(product).shape.end() - 2);  // the broadcast batch
    for (size_t d = 0; d < rows.size(); ++d) out.push_back(a_dims[batch.size() + d]);
    for (size_t d = 0; d < columns.size(); ++d) out.push_back(b_dims[batch.size() + contracted.size() + d]);
    result = Term{g.reshape(part("result"), product, out), batch + rows + columns};
  }
  for (char c : result.labels) {
    if (output.find(c) == std::string::npos) invalid(label + ": label '" + std::string(1, c) + "' is left unsummed");
  }
  result = arranged(result, output);
  define(node, g.reshape(name, result.tensor, g.tensor(result.tensor).shape));
}

}  // namespace tpusim::onnx_detail
