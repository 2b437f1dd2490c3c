// AM_TEST_UNDER_ASAN is defined in a build with AddressSanitizer (GCC or Clang), for the few tests
// whose subject it changes: its quarantine keeps freed memory resident, and its shadow reserves
// terabytes of address space (no address-space limit can hold such a process).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define AM_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AM_TEST_UNDER_ASAN 1
#endif
#endif
