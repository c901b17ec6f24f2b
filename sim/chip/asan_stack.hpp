// AddressSanitizer and SystemC's coroutines (docs/reliability.md, "Sanitizers").
//
// Debian's SystemC 2.3.4 runs each SC_THREAD as a QuickThreads coroutine on a stack of its
// own and tells ASan of each switch (__sanitizer_start_switch_fiber in sc_cor_qt.cpp), but it
// gives the main coroutine's stack as address 0 and size 0. After a switch back to the main
// coroutine, which is where sc_start returns, ASan takes the thread's stack to be [0, 0). A
// C++ throw then cannot unpoison the frames it unwinds (ASan prints "WARNING: ASan is ignoring
// requested __asan_handle_no_return: stack type: default top: 0x000000000000"), and the
// redzones those frames leave behind make a later, correct access look like an overflow: the
// stack-buffer-overflow that `tpusim autodistribute` stopped with, reported in the sigaltstack
// interceptor that ASan's own __asan_handle_no_return calls under a throw.
//
// AsanStackRestore, held around sc_start, gives ASan the thread's real stack back when
// sc_start returns or throws, and clears what was left poisoned: the dead part of the stack
// below this frame, or, when an exception is leaving sc_start, the whole stack, as the
// throw's own __asan_handle_no_return would have done had it known the stack. Outside ASan
// builds it is empty.
//
// AsanUnmappedShadow, held around deleting a SystemC context, covers the other half: SystemC
// unmaps each SC_THREAD's stack there, with the frames still suspended on it (tpusim's units
// wait for good once their work is done) and their redzones still poisoned. GCC 12's ASan
// runtime keeps the shadow of memory that is unmapped (later runtimes clear it in their munmap
// interceptor), so the next simulation's coroutine stacks, mapped at the same addresses, start
// with poison no frame of theirs put there, and a correct access in one of their threads is
// reported as a stack-buffer-overflow. It clears the shadow of every anonymous mapping that went
// away while it was held.
//
// Two limits remain, both outside what tpusim does: an SC_METHOD runs on this thread's stack
// while ASan's bounds for it are wrong, so one that throws would still meet the false report
// (tpusim's processes are all SC_THREADs); and SystemC does not announce the switch when an
// SC_THREAD ends (sc_cor_pkg_qt::abort), so until the next switch ASan keeps the ended thread's
// stack as the current one.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TPUSIM_ASAN_STACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TPUSIM_ASAN_STACK 1
#endif
#endif

#ifdef TPUSIM_ASAN_STACK
#include <pthread.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <utility>
#include <vector>
#endif

namespace tpusim {

#ifdef TPUSIM_ASAN_STACK
namespace asan_stack_detail {

struct ThreadStack {
  char* bottom = nullptr;
  size_t size = 0;
};

// The calling thread's stack as pthreads knows it (for the main thread glibc reads
// /proc/self/maps, so once per thread).
inline ThreadStack threadStack() {
  thread_local const ThreadStack stack = [] {
    ThreadStack found;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return found;
    void* bottom = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &bottom, &size) == 0) found = {static_cast<char*>(bottom), size};
    pthread_attr_destroy(&attr);
    return found;
  }();
  return stack;
}

// Not inlined and not instrumented: its frame holds no redzones, and everything below it is
// dead when it runs.
[[gnu::noinline, gnu::no_sanitize_address]] inline void restore(bool whole_stack) {
  const ThreadStack stack = threadStack();
  if (stack.bottom == nullptr) return;
  // A switch from this stack to itself: ASan takes the new bounds, and has no fake stack to
  // lose (scripts/sanitize.sh runs with detect_stack_use_after_return=0, which SystemC's
  // switches need anyway).
  __sanitizer_start_switch_fiber(nullptr, stack.bottom, stack.size);
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
  char* const end = whole_stack ? stack.bottom + stack.size : static_cast<char*>(__builtin_frame_address(0));
  if (end > stack.bottom) __asan_unpoison_memory_region(stack.bottom, static_cast<size_t>(end - stack.bottom));
}

using Ranges = std::vector<std::pair<uintptr_t, uintptr_t>>;

// This process's private, writable, anonymous mappings of up to 1 GiB (ASan's shadow is
// larger), in address order.
inline Ranges anonymousMappings() {
  Ranges ranges;
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return ranges;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0;
    unsigned long end = 0;
    char perms[5] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &begin, &end, perms, &path_at) < 3) continue;
    const bool anonymous = path_at == 0 || line[path_at] == '\0' || line[path_at] == '\n';
    if (anonymous && perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && end - begin <= (1ul << 30)) {
      ranges.emplace_back(begin, end);
    }
  }
  std::fclose(maps);
  return ranges;
}

// Clears the shadow of what `before` held and `after` does not (both in address order).
inline void unpoisonUnmapped(const Ranges& before, const Ranges& after) {
  size_t a = 0;
  for (auto [begin, end] : before) {
    while (begin < end) {
      while (a < after.size() && after[a].second <= begin) ++a;
      const uintptr_t gap_end = a < after.size() ? std::min(end, std::max(begin, after[a].first)) : end;
      if (gap_end > begin) __asan_unpoison_memory_region(reinterpret_cast<void*>(begin), gap_end - begin);
      if (a == after.size() || after[a].first >= end) break;
      begin = std::min(end, after[a].second);
    }
  }
}

}  // namespace asan_stack_detail
#endif

// Hold one around each sc_start (see the top of this file).
class AsanStackRestore {
 public:
  AsanStackRestore() = default;
  AsanStackRestore(const AsanStackRestore&) = delete;
  AsanStackRestore& operator=(const AsanStackRestore&) = delete;
#ifdef TPUSIM_ASAN_STACK
  ~AsanStackRestore() { asan_stack_detail::restore(std::uncaught_exceptions() > m_exceptions); }

 private:
  int m_exceptions = std::uncaught_exceptions();
#else
  ~AsanStackRestore() {}  // user-provided: a guard held for its scope, not an unused variable
#endif
};

// Hold one around deleting a SystemC context (see the top of this file).
class AsanUnmappedShadow {
 public:
  AsanUnmappedShadow() = default;
  AsanUnmappedShadow(const AsanUnmappedShadow&) = delete;
  AsanUnmappedShadow& operator=(const AsanUnmappedShadow&) = delete;
#ifdef TPUSIM_ASAN_STACK
  ~AsanUnmappedShadow() { asan_stack_detail::unpoisonUnmapped(m_before, asan_stack_detail::anonymousMappings()); }

 private:
  asan_stack_detail::Ranges m_before = asan_stack_detail::anonymousMappings();
#else
  ~AsanUnmappedShadow() {}  // user-provided: a guard held for its scope, not an unused variable
#endif
};

}  // namespace tpusim
