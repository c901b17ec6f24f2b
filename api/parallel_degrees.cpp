#include "api/parallel_degrees.hpp"

#include <string>

#include "sim/common/error.hpp"

namespace tpusim {

namespace {

void checkDegree(const char* flag, int64_t degree, int64_t chips, const std::optional<Topology>& slice) {
  if (degree < 1) throw Error(ErrorKind::kInvalidConfig, std::string(flag) + " must be >= 1");
  if (degree > 1 && !slice) {
    throw Error(ErrorKind::kInvalidConfig,
                std::string(flag) + " " + std::to_string(degree) + " needs an ICI slice of its chips (--topology)");
  }
  if (chips % degree != 0) {
    throw Error(ErrorKind::kInvalidConfig, std::string(flag) + " " + std::to_string(degree) + " does not divide the " +
                                               std::to_string(chips) + " chips of --topology " + slice->shapeString());
  }
}

}  // namespace

ParallelDegrees parallelDegreesOf(const RunRequest& request, const std::optional<Topology>& slice) {
  const int64_t chips = slice ? slice->numChips() : 1;
  ParallelDegrees degrees{request.data_parallel, request.tensor_parallel, request.pipeline_parallel};
  checkDegree("--tp", degrees.tp, chips, slice);
  checkDegree("--pp", degrees.pp, chips, slice);
  if (degrees.dp < 0) throw Error(ErrorKind::kInvalidConfig, "--dp must be >= 1");
  const int64_t rest = degrees.tp * degrees.pp;
  if (degrees.dp == 0) {
    if (chips % rest != 0) {
      throw Error(ErrorKind::kInvalidConfig,
                  "--tp " + std::to_string(degrees.tp) + " x --pp " + std::to_string(degrees.pp) +
                      " does not divide the " + std::to_string(chips) + " chips of --topology " + slice->shapeString());
    }
    degrees.dp = chips / rest;
  }
  checkDegree("--dp", degrees.dp, chips, slice);
  if (degrees.dp * rest != chips) {
    throw Error(ErrorKind::kInvalidConfig, "--dp " + std::to_string(degrees.dp) + " x --tp " +
                                               std::to_string(degrees.tp) + " x --pp " + std::to_string(degrees.pp) +
                                               " is " + std::to_string(degrees.dp * rest) + " chips, but --topology " +
                                               slice->shapeString() + " has " + std::to_string(chips));
  }
  return degrees;
}

}  // namespace tpusim
