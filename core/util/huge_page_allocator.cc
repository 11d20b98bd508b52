#include "core/util/huge_page_allocator.h"

#include <sys/mman.h>

namespace ivytrace {

void* AllocateHugePages(size_t bytes) {
  void* p = std::aligned_alloc(size_t{2} << 20, bytes);
  if (!p) throw std::bad_alloc();
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without transparent huge pages, small pages
  return p;
}

}  // namespace ivytrace
