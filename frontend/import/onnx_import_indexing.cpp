// ONNX's element-indexed gathers and scatters, as a TPU compiler lowers them: indices become
// row numbers into the data viewed as a table, then one Gather (a DMA of rows) or one
// scatter-add of rows (the GatherGrad op, with its kernels, cost and gradient):
//   GatherElements   out[i] = data[i with i_axis replaced by indices[i]], over the flat data
//   GatherND         out[i] = data[indices[i, :]] (the first batch_dims dimensions shared)
//   ScatterElements  data with the updates written at the GatherElements places
//   ScatterND        data with the updates written at the GatherND rows
// A scatter with reduction none writes where a scatter-add of ones is nonzero: the added
// updates, or data; with reduction add it adds them to data. Duplicate indices add under
// either (ONNX leaves none's order undefined). Negative indices count from the end.
#include "frontend/import/onnx_importer.hpp"

namespace tpusim::onnx_detail {

namespace {

ir::Shape stridesOf(const ir::Shape& shape) {
  ir::Shape strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

}  // namespace

int Importer::flatElementIndex(const std::string& name, int indices, const ir::Shape& data_shape, int64_t axis) {
  ir::Graph& g = m_result.graph;
  if (g.tensor(indices).dtype != DType::kInt64) indices = g.cast(name + ".int64", indices, DType::kInt64);
  const ir::Shape shape = g.tensor(indices).shape;
  const ir::Shape strides = stridesOf(data_shape);
  const auto a = static_cast<size_t>(axis);
  const int64_t length = data_shape[a];
  const int zero = constantTensor(name + ".zero", ir::TensorValue{{}, DType::kInt64, {}, {0}});
  const int wrapped =
      g.where(name + ".wrapped", g.compare(ir::CompareDirection::kLt, name + ".negative", indices, zero),
              g.add(name + ".from_end", indices,
                    constantTensor(name + ".length", ir::TensorValue{{}, DType::kInt64, {}, {length}})),
              indices);
  // The flat offset of every other coordinate: a constant of the indices' shape.
  ir::TensorValue offsets = ir::TensorValue::zeros(shape, DType::kInt64);
  std::vector<int64_t> at(shape.size(), 0);
  for (int64_t& offset : offsets.ints) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (d != a) offset += at[d] * strides[d];
    }
    for (size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < shape[d]) break;
      at[d] = 0;
    }
  }
  int along = wrapped;
  if (strides[a] != 1) {
    along = g.binary(ir::OpType::kMul, name + ".along", wrapped,
                     constantTensor(name + ".stride", ir::TensorValue{{}, DType::kInt64, {}, {strides[a]}}));
  }
  return g.add(name, along, constantTensor(name + ".offsets", std::move(offsets)));
}

void Importer::importIndexing(const onnx::NodeProto& node, const std::string& label) {
  const std::string& type = node.op_type();
  ir::Graph& g = m_result.graph;
  const std::string name = opName(node);
  const bool scatter = type == "ScatterElements" || type == "ScatterND";
  expectInputs(node, scatter ? 3 : 2, scatter ? 3 : 2);
  if (type == "GatherND") {
    rejectAttributesExcept(node, {"batch_dims"});
  } else if (type == "ScatterND") {
    rejectAttributesExcept(node, {"reduction"});
  } else {
    rejectAttributesExcept(node, scatter ? std::set<std::string>{"axis", "reduction"} : std::set<std::string>{"axis"});
  }
  const int data = value(node.input(0), label);
  int indices = value(node.input(1), label);
  const ir::Shape data_shape = g.tensor(data).shape;
  const ir::Shape index_shape = g.tensor(indices).shape;
  const DType index_type = g.tensor(indices).dtype;
  if (index_type != DType::kInt64 && index_type != DType::kInt32) invalid(label + ": indices must be int32 or int64");
  if (index_type != DType::kInt64) indices = g.cast(name + ".int64", indices, DType::kInt64);
  const auto rank = static_cast<int64_t>(data_shape.size());
  if (rank == 0) invalid(label + ": " + type + " needs data of rank 1 or more");
  std::string reduction = "none";
  if (const auto* attr = attribute(node, "reduction")) reduction = attr->s();
  if (reduction != "none" && reduction != "add") {
    throw Error(ErrorKind::kUnsupported, label + ": reduction '" + reduction + "' is not supported (none and add are)");
  }

  // The data as a table of rows, and each index's row: ND indices name rows of the trailing
  // dimensions; element indices name single elements.
  ir::Shape table;
  int rows = -1;
  ir::Shape updates_expected;  // a scatter's updates: the indices' shape (ND: their leading shape, then a row)
  if (type == "GatherElements" || type == "ScatterElements") {
    const int64_t axis = normalizeAxis(intAttribute(node, "axis", 0), rank, label);
    if (index_shape.size() != data_shape.size()) invalid(label + ": indices must have data's rank");
    for (size_t d = 0; d < data_shape.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && index_shape[d] > data_shape[d]) {
        invalid(label + ": indices " + ir::shapeToString(index_shape) + " exceed data " +
                ir::shapeToString(data_shape) + " off the axis");
      }
    }
    table = {ir::elementCount(data_shape), 1};
    rows = flatElementIndex(name + ".rows", indices, data_shape, axis);
    updates_expected = index_shape;
  } else {
    const int64_t batch_dims = type == "GatherND" ? intAttribute(node, "batch_dims", 0) : 0;
    if (index_shape.empty()) invalid(label + ": indices must have rank 1 or more");
    const int64_t depth = index_shape.back();
    const auto b = static_cast<size_t>(batch_dims);
    if (batch_dims < 0 || depth < 1 || batch_dims + depth > rank || b >= index_shape.size()) {
      invalid(label + ": index tuples of " + std::to_string(depth) + " after " + std::to_string(batch_dims) +
              " batch dimensions do not fit data " + ir::shapeToString(data_shape));
    }
    for (size_t d = 0; d < b; ++d) {
      if (index_shape[d] != data_shape[d]) invalid(label + ": indices and data differ in a batch dimension");
    }
    const ir::Shape leading(index_shape.begin(), index_shape.end() - 1);
    int64_t per_batch = 1;
    for (int64_t d = 0; d < depth; ++d) per_batch *= data_shape[b + static_cast<size_t>(d)];
    const ir::Shape rest(data_shape.begin() + batch_dims + depth, data_shape.end());
    int64_t batches = 1;
    for (size_t d = 0; d < b; ++d) batches *= data_shape[d];
    table = {batches * per_batch, ir::elementCount(rest)};
    // row = sum_j wrapped(index_j) x (product of the indexed dimensions after j), plus the batch's first row.
    const int zero = constantTensor(name + ".zero", ir::TensorValue{{}, DType::kInt64, {}, {0}});
    for (int64_t j = 0; j < depth; ++j) {
      const std::string part = name + ".index" + std::to_string(j);
      const int64_t length = data_shape[b + static_cast<size_t>(j)];
      const int component = g.reshape(part,
                                      g.slice(part + ".slice", indices, static_cast<int64_t>(index_shape.size()) - 1, j,
                                              1, ir::TensorRole::kActivation),
                                      leading);
      const int wrapped =
          g.where(part + ".wrapped", g.compare(ir::CompareDirection::kLt, part + ".negative", component, zero),
                  g.add(part + ".from_end", component,
                        constantTensor(part + ".length", ir::TensorValue{{}, DType::kInt64, {}, {length}})),
                  component);
      rows = rows < 0
                 ? wrapped
                 : g.add(part + ".row",
                         g.binary(ir::OpType::kMul, part + ".scaled", rows,
                                  constantTensor(part + ".stride", ir::TensorValue{{}, DType::kInt64, {}, {length}})),
                         wrapped);
    }
    if (batch_dims > 0) {
      ir::TensorValue first_rows = ir::TensorValue::zeros(leading, DType::kInt64);
      const int64_t inner = ir::elementCount(ir::Shape(leading.begin() + batch_dims, leading.end()));
      for (size_t i = 0; i < first_rows.ints.size(); ++i) {
        first_rows.ints[i] = static_cast<int64_t>(i) / inner * per_batch;
      }
      rows = g.add(name + ".rows", rows, constantTensor(name + ".batch_rows", std::move(first_rows)));
    }
    updates_expected = leading;
    updates_expected.insert(updates_expected.end(), rest.begin(), rest.end());
    if (type == "GatherND") {
      const int got = g.gather(name + ".rows_gathered", g.reshape(name + ".table", data, table), rows, 0);
      define(node, g.reshape(name, got, updates_expected));
      return;
    }
  }
  if (type == "GatherElements") {
    define(node, g.gather(name, g.reshape(name + ".flat", data, {table[0]}), rows, 0));
    return;
  }

  const int updates = value(node.input(2), label);
  if (g.tensor(updates).shape != updates_expected || g.tensor(updates).dtype != g.tensor(data).dtype) {
    invalid(label + ": updates must have shape " + ir::shapeToString(updates_expected) + " and data's type");
  }
  const DType dtype = g.tensor(data).dtype;
  if (!isFloatingDType(dtype)) {
    throw Error(ErrorKind::kUnsupported, label +
                                             ": a scatter computed at run time needs float data (its "
                                             "integer form is evaluated only while compiling)");
  }
  const int64_t count = ir::elementCount(g.tensor(rows).shape);
  const int flat_rows = g.reshape(name + ".row_list", rows, {count});
  const int added = g.gatherGrad(name + ".added", g.reshape(name + ".update_rows", updates, {count, table[1]}),
                                 flat_rows, table, 0, ir::TensorRole::kActivation);
  const int table_data = g.reshape(name + ".table", data, table);
  int out = -1;
  if (reduction == "add") {
    out = g.add(name + ".sum", table_data, added);
  } else {
    ir::TensorValue ones = ir::TensorValue::zeros({count, 1}, dtype);
    std::fill(ones.floats.begin(), ones.floats.end(), 1.0);
    const int written = g.gatherGrad(name + ".written", constantTensor(name + ".ones", std::move(ones)), flat_rows,
                                     {table[0], 1}, 0, ir::TensorRole::kActivation);
    const int hit = g.compare(ir::CompareDirection::kGt, name + ".hit", written,
                              constantTensor(name + ".zero_count", ir::TensorValue::zeros({}, dtype)));
    out = g.where(name + ".replaced", hit, added, table_data);
  }
  define(node, g.reshape(name, out, data_shape));
}

}  // namespace tpusim::onnx_detail
