// Large allocations on transparent huge pages, for the tpusim binary.
//
// The CPU executor (reference/cpu) gives each tensor of a step a buffer of its own, touched
// once: `tpusim run traces/resnet50.onnx --batch 2 --functional` fills 5 GiB, and with 4 KiB
// pages about half its time went to page faults and to the kernel clearing the pages
// (docs/performance.md). A block of 4 MiB or more therefore starts on a 2 MiB boundary and its
// whole 2 MiB pages are advised MADV_HUGEPAGE, so that a kernel whose transparent huge pages are
// in "madvise" mode (Debian's default) backs them with huge pages; under "always" they were
// already, under "never" nothing changes. Sizes are not rounded up, so the memory touched is
// what it was. This replaces the global operator new and delete of this executable only: the
// library and the Python module keep the defaults.
#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kLargeBlock = std::size_t{4} << 20;

void* allocate(std::size_t size) {
  void* block = nullptr;
  if (size < kLargeBlock) {
    block = std::malloc(size == 0 ? 1 : size);
  } else if (posix_memalign(&block, kHugePage, size) == 0) {
    // From a huge page boundary, the whole huge pages of the block; the rest keeps 4 KiB pages.
    madvise(block, size & ~(kHugePage - 1), MADV_HUGEPAGE);  // advice: without THP it is ignored
  }
  if (!block) throw std::bad_alloc();
  return block;
}

}  // namespace

// posix_memalign's blocks are free()d as malloc's are. Every unaligned form is replaced, the
// array and nothrow ones too: a form left to the default may come from another allocator (a
// sanitizer's runtime has its own) and then be freed here (std::stable_sort's temporary buffer
// is taken with the nothrow form and given back with the sized delete). The aligned forms
// (std::align_val_t) keep the defaults, new and delete alike.
void* operator new(std::size_t size) {
  return allocate(size);
}
void* operator new[](std::size_t size) {
  return allocate(size);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* block) noexcept {
  std::free(block);
}
void operator delete[](void* block) noexcept {
  std::free(block);
}
void operator delete(void* block, std::size_t) noexcept {
  std::free(block);
}
void operator delete[](void* block, std::size_t) noexcept {
  std::free(block);
}
void operator delete(void* block, const std::nothrow_t&) noexcept {
  std::free(block);
}
void operator delete[](void* block, const std::nothrow_t&) noexcept {
  std::free(block);
}
