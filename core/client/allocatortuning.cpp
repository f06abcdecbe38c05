#include "allocatortuning.h"

#include <cstdlib> // defines __GLIBC__ with glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace Sandbox {

bool tuneAllocatorForStreams()
{
#if defined(__GLIBC__)
    constexpr int kMmapThreshold = 16 * 1024 * 1024;
    constexpr int kTrimThreshold = 64 * 1024 * 1024;
    // Setting either turns off glibc's own adjustment of both, so both are set.
    return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1
           && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
    return false;
#endif
}

} // namespace Sandbox
