// HLO text import: the lexer's tokens and positions, the parser's module
// (shapes, layouts, tuples, computations, attributes), and the importer's
// graph (op counts, names, inlined fusions, errors with file:line:column).
#include "frontend/import/hlo_import.hpp"

#include <gtest/gtest.h>

#include "api/session.hpp"
#include "frontend/import/hlo_lexer.hpp"
#include "frontend/import/hlo_parser.hpp"
#include "sim/common/error.hpp"
#include "tests/support/op_counts.hpp"

namespace tpusim {
namespace {

const std::string kHloDir = std::string(TPUSIM_SOURCE_DIR) + "/tests/hlo/";

Error importError(const std::string& text) {
  try {
    importHloText(text, "t.hlo");
  } catch (const Error& error) {
    return error;
  }
  return Error(ErrorKind::kInternal, "no error");
}

using testing::countOps;

TEST(HloLexer, WordsPunctuationAndPositions) {
  const auto tokens = hlo::lexHlo(
      "ROOT %gte.1 = f32[2]{0} get-tuple-element(t), index=0 /* c */\n"
      "  c = f32[] constant(-inf), dim_labels=b01f_01io->b01f, window={pad=1_1x-1_0} // rest\n",
      "x.hlo");
  std::vector<std::string> text;
  for (const auto& t : tokens) text.push_back(t.text);
  const std::vector<std::string> expected = {
      "ROOT", "gte.1",    "=", "f32",  "[",     "2", "]",          "{", "0",         "}",   "get-tuple-element",
      "(",    "t",        ")", ",",    "index", "=", "0",          "c", "=",         "f32", "[",
      "]",    "constant", "(", "-inf", ")",     ",", "dim_labels", "=", "b01f_01io", "->",  "b01f",
      ",",    "window",   "=", "{",    "pad",   "=", "1_1x-1_0",   "}", ""};
  EXPECT_EQ(text, expected);
  EXPECT_EQ(tokens[1].line, 1);
  EXPECT_EQ(tokens[1].column, 6);  // after the dropped '%'
  EXPECT_EQ(tokens[18].line, 2);   // c
  EXPECT_EQ(tokens[18].column, 3);
  EXPECT_EQ(tokens.back().kind, hlo::TokenKind::kEnd);
  EXPECT_THROW(hlo::lexHlo("a = f32[] constant(1) /* open", "x.hlo"), Error);
  const auto numbers = hlo::lexHlo("{1e+10, -2.5E+3, 3e-2}", "x.hlo");
  EXPECT_EQ(numbers[1].text, "1e+10");
  EXPECT_EQ(numbers[3].text, "-2.5E+3");
  EXPECT_EQ(numbers[5].text, "3e-2");
}

TEST(HloParser, ShapesLayoutsTuplesAndComputations) {
  const hlo::HloModule module = hlo::parseHlo(
      "HloModule m, entry_computation_layout={(f32[2,3]{0,1})->(f32[2,3]{1,0}, s32[])}\n"
      "%r (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
      "  ROOT %s = f32[] add(f32[] %a, f32[] %b)\n}\n"
      "ENTRY e {\n  p = f32[2,3]{0,1:T(8,128)} parameter(0), metadata={op_name=\"x\" source_line=3}\n"
      "  i = s32[] constant(7)\n  ROOT t = (f32[2,3]{1,0}, s32[]) tuple(p, i)\n}\n",
      "m.hlo");
  EXPECT_EQ(module.name, "m");
  ASSERT_EQ(module.computations.size(), 2u);
  EXPECT_EQ(module.entry, 1);
  EXPECT_EQ(module.computations[0].name, "r");
  EXPECT_EQ(module.computations[0].instructions[2].operands, (std::vector<std::string>{"a", "b"}));
  const hlo::HloComputation& entry = module.computations[1];
  EXPECT_EQ(entry.root, 2);
  const hlo::HloInstruction& p = entry.instructions[0];
  EXPECT_EQ(p.shape.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.shape.minor_to_major, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.parameter_number, 0);
  ASSERT_NE(p.attribute("metadata"), nullptr);
  EXPECT_EQ(entry.instructions[1].literal.size(), 1u);
  const hlo::HloShape& tuple = entry.instructions[2].shape;
  EXPECT_TRUE(tuple.is_tuple);
  EXPECT_EQ(tuple.toString(), "(f32[2,3], s32[])");
  EXPECT_EQ(tuple.where.line, 10);
}

TEST(HloImport, MlpTrainStepGraph) {
  const ImportedModel model = importHloFile(kHloDir + "mlp_train_step.hlo");
  const ir::Graph& g = model.graph;
  EXPECT_EQ(countOps(g, ir::OpType::kMatMul), 5);
  // x^T.dz1 and a1^T.dz2 contract dimension 0: a transpose flag, not a Transpose op;
  // the one Transpose is the module's own transpose.53.
  EXPECT_EQ(countOps(g, ir::OpType::kTranspose), 1);
  EXPECT_EQ(countOps(g, ir::OpType::kMaximum), 1);
  EXPECT_EQ(countOps(g, ir::OpType::kCompare), 1);
  EXPECT_EQ(countOps(g, ir::OpType::kWhere), 1);
  std::vector<std::string> inputs;
  for (const ir::Tensor& t : g.tensors()) {
    if (t.role == ir::TensorRole::kInput) inputs.push_back(t.name);
  }
  EXPECT_EQ(inputs, (std::vector<std::string>{"Arg_0.1", "Arg_1.2", "Arg_2.3", "Arg_3.4", "Arg_4.5", "Arg_5.6"}));
  ASSERT_EQ(g.outputs().size(), 5u);
  EXPECT_EQ(g.tensor(g.outputs()[0]).name, "multiply.42");
  EXPECT_EQ(g.tensor(g.outputs()[0]).shape, ir::Shape{});
  EXPECT_EQ(g.tensor(g.outputs()[1]).shape, (ir::Shape{16, 32}));
  // Reduce's init values are the identities (0, -inf): no extra combine ops.
  EXPECT_EQ(countOps(g, ir::OpType::kReduce), 6);
  EXPECT_EQ(model.initializers.at("constant.41").floats, std::vector<double>{-0.125});
  EXPECT_EQ(model.batch, 8);
}

TEST(HloImport, FusionsAndCallsAreInlinedWithPrefixedNames) {
  const ImportedModel model = importHloText(
      "HloModule m\nfused {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  m = f32[4] multiply(a, b)\n"
      "  ROOT n = f32[4] negate(m)\n}\n"
      "ENTRY e {\n  x = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(x, x), kind=kLoop, calls=fused\n}\n",
      "f.hlo");
  const ir::Graph& g = model.graph;
  ASSERT_EQ(g.ops().size(), 2u);
  EXPECT_EQ(g.tensor(g.ops()[0].outputs[0]).name, "f/m");
  EXPECT_EQ(g.tensor(g.outputs()[0]).name, "f");  // the result carries the fusion's name
}

TEST(HloImport, ReduceWithAnotherInitValueCombinesIt) {
  const ImportedModel model = importHloText(
      "HloModule m\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] maximum(a, b)\n}\n"
      "ENTRY e {\n  x = f32[2,3] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[3] reduce(x, z), dimensions={0}, to_apply=mx\n}\n",
      "r.hlo");
  EXPECT_EQ(countOps(model.graph, ir::OpType::kReduce), 1);
  EXPECT_EQ(countOps(model.graph, ir::OpType::kMaximum), 1);  // max(x) then max with 0, a ReLU of the fold
}

TEST(HloImport, ErrorsNameFileLineColumnAndInstruction) {
  const Error cycle = importError(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] add(p, b)\n  b = f32[2] negate(a)\n"
      "  ROOT c = f32[2] negate(b)\n}\n");
  EXPECT_EQ(cycle.kind(), ErrorKind::kInvalidInput);
  EXPECT_STREQ(cycle.what(), "t.hlo:4:3: instruction 'a': instructions form a cycle: b -> a -> b");
  const Error mismatch = importError(
      "HloModule m\nENTRY e {\n  a = f32[2,3] parameter(0)\n  b = f32[3,2] parameter(1)\n"
      "  ROOT c = f32[2,3] add(a, b)\n}\n");
  EXPECT_STREQ(mismatch.what(),
               "t.hlo:5:3: instruction 'c': the operands of 'add' have shapes f32[2,3] and f32[3,2]; HLO needs them "
               "equal");
  const Error truncated = importError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(");
  EXPECT_EQ(truncated.kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(std::string(truncated.what()).find("t.hlo:4:26: "), std::string::npos) << truncated.what();
  const Error loop = importError("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT w = f32[2] while(p)\n}\n");
  EXPECT_EQ(loop.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(loop.what()).find("instruction 'w': opcode 'while' is not supported yet"), std::string::npos);
  const Error mlir = importError("module @jit_f {\n  func.func public @main() {\n  }\n}\n");
  EXPECT_EQ(mlir.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(mlir.what()).find("dialect=\"hlo\""), std::string::npos);
  const Error region = importError(
      "HloModule m\nmul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT c = f32[] multiply(a, b)\n}\n"
      "ENTRY e {\n  x = f32[2] parameter(0)\n  o = f32[] constant(1)\n"
      "  ROOT r = f32[] reduce(x, o), dimensions={0}, to_apply=mul\n}\n");
  EXPECT_EQ(region.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(region.what()).find("to_apply=mul is not a single add, maximum or minimum"), std::string::npos);
}

TEST(HloImport, DeadInstructionsAreCheckedButNotImported) {
  const ImportedModel model = importHloText(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  unused = f32[2] exponential(p)\n"
      "  ROOT n = f32[2] negate(p)\n}\n",
      "d.hlo");
  EXPECT_EQ(model.graph.ops().size(), 1u);
  const Error unknown = importError(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  unused = f32[2] exponentail(p)\n"
      "  ROOT n = f32[2] negate(p)\n}\n");
  EXPECT_STREQ(unknown.what(), "t.hlo:4:3: instruction 'unused': unknown opcode 'exponentail'");
  const Error undefined = importError(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  unused = f32[2] exponential(q)\n"
      "  ROOT n = f32[2] negate(p)\n}\n");
  EXPECT_EQ(undefined.kind(), ErrorKind::kInvalidInput);
  EXPECT_NE(std::string(undefined.what()).find("operand 'q' is not defined"), std::string::npos);
}

TEST(HloImport, ConstantsRoundToTheirDtypeAndBitcastsNeedDefaultLayouts) {
  const ImportedModel model = importHloText(
      "HloModule m\nENTRY e {\n  c = bf16[2] constant({0.3333333, 1e+3})\n  ROOT n = bf16[2] negate(c)\n}\n", "c.hlo");
  // bf16 keeps 8 significant bits: 1/3 -> 0.333984375, 1000 -> 1000.
  EXPECT_EQ(model.initializers.at("c").floats, (std::vector<double>{0.333984375, 1000.0}));
  const Error bitcast =
      importError("HloModule m\nENTRY e {\n  p = f32[2,3]{0,1} parameter(0)\n  ROOT b = f32[6]{0} bitcast(p)\n}\n");
  EXPECT_EQ(bitcast.kind(), ErrorKind::kUnsupported);
  EXPECT_NE(std::string(bitcast.what()).find("t.hlo:4:3: instruction 'b': a bitcast that changes the layout"),
            std::string::npos);
  const Error arity = importError(
      "HloModule m\nf {\n  a = f32[2] parameter(0)\n  ROOT n = f32[2] negate(a)\n}\n"
      "ENTRY e {\n  p = f32[2] parameter(0)\n  ROOT c = f32[2] call(p, p), to_apply=f\n}\n");
  EXPECT_NE(std::string(arity.what()).find("passes 2 operands to 'f', which has 1 parameters"), std::string::npos);
}

TEST(HloImport, ConvertIsACastOrFoldsIntoAConstant) {
  const ImportedModel model = importHloText(
      "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  same = f32[2] convert(x)\n  b = bf16[2] convert(same)\n"
      "  k = s32[] constant(3)\n  kf = bf16[] convert(k)\n  kb = bf16[2] broadcast(kf), dimensions={}\n"
      "  ROOT m = bf16[2] multiply(b, kb)\n}\n",
      "v.hlo");
  EXPECT_EQ(countOps(model.graph, ir::OpType::kCast), 1);  // f32 -> bf16; same dtype is nothing, k folds
  EXPECT_EQ(model.initializers.at("kf").dtype, DType::kBF16);
  EXPECT_EQ(model.initializers.at("kf").floats, std::vector<double>{3.0});
}

TEST(HloImport, SessionRunsModulesAsWritten) {
  RunRequest request;
  request.model_path = kHloDir + "mlp_train_step.hlo";
  const ModelGraph built = buildModelGraph(request);
  EXPECT_EQ(built.mode, "as-written");
  EXPECT_EQ(countOps(built.graph, ir::OpType::kSgdUpdate), 0);  // the module holds its own update
  request.mode = "training";
  try {
    buildModelGraph(request);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kInvalidConfig);
    EXPECT_NE(std::string(error.what()).find("runs as written"), std::string::npos);
  }
  EXPECT_TRUE(isHloPath(kHloDir + "conv_layouts.hlo"));
  EXPECT_FALSE(isHloPath(std::string(TPUSIM_SOURCE_DIR) + "/traces/mlp.onnx"));
}

}  // namespace
}  // namespace tpusim
