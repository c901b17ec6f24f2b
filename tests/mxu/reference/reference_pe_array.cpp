#include "tests/mxu/reference/reference_pe_array.hpp"

#include "tests/mxu/reference/reference_common.hpp"

namespace tpusim {

PeArrayRun referencePeArray(const ArrayConfig& array, const MatmulShape& shape, const std::vector<PassOperands>& passes,
                            uint64_t early_start) {
  // The output-stationary engine still steps every PE one at a time: it is its own reference.
  return pe::runOn({pe_reference::weightStationary, pe::outputStationary}, array, shape, passes, early_start);
}

}  // namespace tpusim
