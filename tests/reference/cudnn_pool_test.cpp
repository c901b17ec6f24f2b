// Which poolings the GPU device gives cuDNN (reference/cuda/cudnn_pool.hpp): only those whose
// descriptor cuDNN can state and whose result it defines as the CPU executor does.
#include "reference/cuda/cudnn_pool.hpp"

#include <gtest/gtest.h>

namespace tpusim::reference::cuda {
namespace {

// A pooling of one plane [2 x 3, spatial...] with each dimension's kernel, stride and pad alike
// on both sides, and the floor output size.
PoolArgs pooling(std::vector<int64_t> spatial, int64_t kernel, int64_t stride, int64_t pad, Elem elem = Elem::kF32) {
  PoolArgs a;
  a.rank = static_cast<int>(spatial.size());
  a.planes = 6;
  a.x.elem = a.y.elem = elem;
  for (int d = 0; d < a.rank; ++d) {
    a.x_spatial[d] = spatial[static_cast<size_t>(d)];
    a.y_spatial[d] = (a.x_spatial[d] + 2 * pad - kernel) / stride + 1;
    a.kernel[d] = kernel;
    a.strides[d] = stride;
    a.dilations[d] = 1;
    a.pads[d] = a.pads[d + a.rank] = pad;
  }
  return a;
}

TEST(CudnnPools, TakesTwoAndThreeSpatialDimensionsOfFloatsWithEvenPads) {
  EXPECT_TRUE(cudnnPools(pooling({112, 112}, 3, 2, 1)));  // ResNet-50's max pool: 112 -> 56
  EXPECT_EQ(pooling({112, 112}, 3, 2, 1).y_spatial[0], 56);
  EXPECT_TRUE(cudnnPools(pooling({11, 11}, 2, 2, 0)));  // the floor drops the last column
  EXPECT_TRUE(cudnnPools(pooling({5, 4, 6}, 2, 2, 1)));
  EXPECT_TRUE(cudnnPools(pooling({7, 7}, 3, 1, 1, Elem::kBF16)));
  EXPECT_TRUE(cudnnPools(pooling({7, 7}, 3, 1, 1, Elem::kF16)));
}

TEST(CudnnPools, LeavesTheRestToTheProjectsKernel) {
  EXPECT_FALSE(cudnnPools(pooling({13}, 3, 1, 1)));                // one spatial dimension
  EXPECT_FALSE(cudnnPools(pooling({3, 3, 3, 3}, 2, 1, 0)));        // four
  EXPECT_FALSE(cudnnPools(pooling({7, 7}, 3, 1, 1, Elem::kI64)));  // integers
  EXPECT_FALSE(cudnnPools(pooling({7, 7}, 2, 1, 2)));  // a pad as wide as the kernel: windows wholly in the padding

  PoolArgs uneven = pooling({8, 8}, 3, 2, 1);
  uneven.pads[2] = 2;  // more after than before along the first dimension (SAME padding)
  EXPECT_FALSE(cudnnPools(uneven));

  PoolArgs dilated = pooling({9, 9}, 2, 1, 0);
  dilated.dilations[1] = 2;
  dilated.y_spatial[1] = 7;
  EXPECT_FALSE(cudnnPools(dilated));

  PoolArgs ceil = pooling({11, 11}, 2, 2, 0);
  ceil.y_spatial[0] = 6;  // ceil mode's last, partial window
  EXPECT_FALSE(cudnnPools(ceil));

  PoolArgs huge = pooling({7, 7}, 3, 1, 1);
  huge.planes = int64_t{1} << 31;  // more planes than cuDNN's int dimension holds
  EXPECT_FALSE(cudnnPools(huge));
}

}  // namespace
}  // namespace tpusim::reference::cuda
