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

TEST(ProgramCheck, DescriptorsStayInsideTheirBufferAndHbm) {
  const auto problem = [](uint64_t address, uint64_t rows, uint64_t row_bytes, uint64_t stride, bool load) {
    testing::ProgramBuilder b;
    const uint32_t buffer = b.hbmBuffer(4096, 1024);  // bytes [4096, 5120)
    b.dmaAt(address, rows, row_bytes, stride, load, {}, buffer);
    return problemWith(b.program());
  };
  EXPECT_EQ(problem(4096, 1, 1024, 0, true), "");
  EXPECT_EQ(problem(4096, 4, 64, 256, false), "");  // last row [4096 + 768, 4096 + 832)
  EXPECT_EQ(problem(4096, 8, 64, 0, true), "");     // stride 0: one row read 8 times
  EXPECT_EQ(problem(4160, 1, 1024, 0, true),
            "instruction 0 (load0) covers HBM bytes [4160, 5184) but its buffer hbm0 is [4096, 5120)");
  EXPECT_EQ(problem(4000, 1, 64, 0, false),
            "instruction 0 (store0) covers HBM bytes [4000, 4064) but its buffer hbm0 is [4096, 5120)");
  // 4 rows 320 apart: the last begins at 4096 + 3 x 320 = 5056 and ends at 5184.
  EXPECT_EQ(problem(4096, 4, 128, 320, true),
            "instruction 0 (load0) covers HBM bytes [4096, 5184) but its buffer hbm0 is [4096, 5120)");
  // tpuv4 has 32 GiB = 34359738368 bytes.
  testing::ProgramBuilder past;
  past.dmaAt(34359738368 - 64, 1, 128, 0, true, {});
  EXPECT_EQ(problemWith(past.program()),
            "instruction 0 (load0) reaches HBM byte 34359738432, past the 34359738368 bytes of HBM");
  testing::ProgramBuilder wrap;
  wrap.dmaAt(UINT64_MAX - 8, 2, 64, UINT64_MAX / 2, true, {});
  EXPECT_NE(problemWith(wrap.program()).find("reaches HBM byte more than 2^64"), std::string::npos);
}

TEST(ProgramCheck, MalformedDescriptors) {
  testing::ProgramBuilder rows;
  rows.dmaAt(0, 4, 64, 64, true, {});
  rows.program().mutable_chips(0)->mutable_instructions(0)->mutable_dma()->set_bytes(200);
  EXPECT_EQ(problemWith(rows.program()), "instruction 0 (load0) has 4 rows of 64 bytes, which is not its 200 bytes");
  testing::ProgramBuilder single;
  single.dmaAt(0, 1, 64, 0, true, {});
  single.program().mutable_chips(0)->mutable_instructions(0)->mutable_dma()->set_row_stride(128);
  EXPECT_EQ(problemWith(single.program()),
            "instruction 0 (load0) sets row_bytes or row_stride with rows 0; a strided descriptor has rows >= 2");
  testing::ProgramBuilder sides;
  sides.dmaAt(0, 1, 64, 0, true, {});
  sides.program().mutable_chips(0)->mutable_instructions(0)->mutable_dma()->set_dst(program::HBM);
  EXPECT_EQ(problemWith(sides.program()),
            "instruction 0 (load0) moves HBM to HBM; a DMA engine moves between HBM and another memory");
}

TEST(ProgramCheck, FormatAndVersion) {
  testing::ProgramBuilder b;
  b.program().set_schema_version(1);  // whole instruction names, as the builder gives them
  EXPECT_EQ(problemWith(b.program()), "");
  b.program().set_schema_version(0);
  EXPECT_NE(problemWith(b.program()).find("schema version 0 is not supported (this tpusim reads 1 to 2)"),
            std::string::npos);
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
