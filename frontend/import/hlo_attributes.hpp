// Reads the values of HLO instruction attributes (kept as tokens by the
// parser): dimension lists, slice ranges, convolution windows and dim_labels,
// replica groups. A malformed value is an ErrorKind::kInvalidInput Error
// naming the attribute; the importer adds the file, line and instruction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/import/hlo_module.hpp"

namespace tpusim::hlo {

// {0,1} or {} (dimensions=, lhs_contracting_dims=, ...).
std::vector<int64_t> readIntList(const HloAttribute& attribute);
// A single word (direction=GT, to_apply=add.3).
std::string readWord(const HloAttribute& attribute);
int64_t readInt(const HloAttribute& attribute);

struct SliceRange {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
};
// slice={[0:4], [1:8:2]}
std::vector<SliceRange> readSlices(const HloAttribute& attribute);

// window={size=3x3 stride=2x2 pad=1_1x1_1 lhs_dilate=1x1 rhs_dilate=2x2}; fields
// not written keep their defaults for `rank` spatial dimensions.
struct Window {
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
  std::vector<int64_t> pad_low;
  std::vector<int64_t> pad_high;
  std::vector<int64_t> lhs_dilate;
  std::vector<int64_t> rhs_dilate;
  std::vector<int64_t> reversal;  // rhs_reversal=1x0: 1 where the kernel is flipped
};
Window readWindow(const HloAttribute& attribute, size_t rank);

// padding=1_2x0_0_1 for pad: low_high or low_high_interior per dimension.
struct PadDim {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
};
std::vector<PadDim> readPadding(const HloAttribute& attribute, size_t rank);

// dim_labels=b01f_01io->b01f: the input, kernel and output labels.
struct DimLabels {
  std::string input;
  std::string kernel;
  std::string output;
};
DimLabels readDimLabels(const HloAttribute& attribute);

// The size of each replica group: replica_groups={} (all replicas: 1 on the one
// chip simulated), {{0},{1}}, {{0,1,2,3}} or the iota form [2,4]<=[8].
int64_t readReplicaGroupSize(const HloAttribute& attribute);

}  // namespace tpusim::hlo
