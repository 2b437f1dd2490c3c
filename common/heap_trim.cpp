#include "common/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AM_HEAP_IS_SANITIZERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define AM_HEAP_IS_SANITIZERS 1
#endif
#endif

namespace am {

void release_free_heap() noexcept {
#if defined(__GLIBC__) && !defined(AM_HEAP_IS_SANITIZERS)
  malloc_trim(0);
#endif
}

bool release_free_heap_is_effective() noexcept {
#if defined(__GLIBC__) && !defined(AM_HEAP_IS_SANITIZERS)
  return true;
#else
  return false;
#endif
}

}  // namespace am
