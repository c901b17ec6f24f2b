#include "sim/chip/program_check.hpp"

#include <gtest/gtest.h>

#include "sim/chip/driver.hpp"
#include "sim/common/error.hpp"
#include "tests/support/program_builder.hpp"

namespace tpusim {
namespace {

std::string problemWith(program::Program& program) {
  try {
    simulate(program, HardwareParams::load("tpuv4"));
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(ProgramCheck, ForwardOrSelfDependencyIsRejectedAsCyclic) {
  testing::ProgramBuilder b;
  b.matmul(8, 8, 8, {1});
  b.matmul(8, 8, 8, {0});
  EXPECT_NE(problemWith(b.program()).find("cyclic or out of dependency order"), std::string::npos);
}

TEST(ProgramCheck, UnsupportedMxuDTypesAndPassesAreRejected) {
  testing::ProgramBuilder pair;
  pair.matmul(8, 8, 8, {});
  pair.program().mutable_chips(0)->mutable_instructions(0)->mutable_matmul()->set_input_dtype(program::INT8);
  EXPECT_EQ(problemWith(pair.program()),
            "instruction 0 (mm0) multiplies INT8 into F32, which the MXU does not support (bf16, f16 or f32 into "
            "f32; int8 into int32)");
  testing::ProgramBuilder f64;
  f64.matmul(8, 8, 8, {});
  f64.program().mutable_chips(0)->mutable_instructions(0)->mutable_matmul()->set_input_dtype(program::F64);
  EXPECT_NE(problemWith(f64.program()).find("multiplies F64 into F32"), std::string::npos);
  testing::ProgramBuilder passes;
  passes.matmul(8, 8, 8, {});
  passes.program().mutable_chips(0)->mutable_instructions(0)->mutable_matmul()->set_passes(3);
  EXPECT_EQ(problemWith(passes.program()),
            "instruction 0 (mm0) asks for 3 passes; an f32 matmul takes 1, 3 or 6, others 1");
}

TEST(ProgramCheck, UnitsMustExistOnThePreset) {
  testing::ProgramBuilder mxu;
  mxu.matmul(8, 8, 8, {}, 0, 4);  // tpuv4 has MXUs 0..3
  EXPECT_NE(problemWith(mxu.program()).find("uses MXU 4 but a core has 4"), std::string::npos);
  testing::ProgramBuilder core;
  core.vector(8, 1, {}, 2);  // tpuv4 has cores 0 and 1
  EXPECT_NE(problemWith(core.program()).find("runs on core 2"), std::string::npos);
  testing::ProgramBuilder dma;
  dma.dma(64, true, {}, 0, 2);
  EXPECT_NE(problemWith(dma.program()).find("uses DMA engine 2"), std::string::npos);
}

TEST(ProgramCheck, MalformedInstructions) {
  testing::ProgramBuilder empty;
  empty.matmul(0, 8, 8, {});
  EXPECT_NE(problemWith(empty.program()).find("empty matmul"), std::string::npos);
  testing::ProgramBuilder wrong_body;
  wrong_body.matmul(8, 8, 8, {});
  wrong_body.program().mutable_chips(0)->mutable_instructions(0)->set_unit(program::VPU);
  EXPECT_NE(problemWith(wrong_body.program()).find("not a vector op"), std::string::npos);
  testing::ProgramBuilder bad_buffer;
  bad_buffer.vector(8, 1, {});
  bad_buffer.program().mutable_chips(0)->mutable_instructions(0)->add_reads(7);
  EXPECT_NE(problemWith(bad_buffer.program()).find("reads unknown buffer 7"), std::string::npos);
}

TEST(ProgramCheck, FormatAndVersion) {
  testing::ProgramBuilder b;
  b.program().set_schema_version(99);
  EXPECT_NE(problemWith(b.program()).find("schema version 99"), std::string::npos);
  b.program().set_format("other");
  EXPECT_NE(problemWith(b.program()).find("not a tpusim Program"), std::string::npos);
}

TEST(ProgramCheck, MultiChipProgramsAreClearlyUnsupported) {
  testing::ProgramBuilder b;
  b.vector(8, 1, {});
  b.program().add_chips();
  try {
    simulate(b.program(), HardwareParams::load("tpuv4"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::kUnsupported);
  }
}

}  // namespace
}  // namespace tpusim
