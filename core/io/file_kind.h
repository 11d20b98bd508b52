// Telling ivytrace's file formats apart by their 8-byte magic.
#pragma once

#include <string>

#include "core/util/status.h"

namespace ivytrace {

enum class FileKind { kTrace, kGraph, kPlan, kOnnx };

inline constexpr char kGraphMagic[] = "IVYGRF01";
inline constexpr char kPlanMagic[] = "IVYPLN02";    // written (plan.proto: data section)
inline constexpr char kPlanMagicV1[] = "IVYPLN01";  // still read: constants inline
// Format 02: the data section starts here, after the magic, its size and zero padding.
inline constexpr size_t kPlanDataStart = 64;
inline constexpr size_t kPlanDataAlign = 64;

// Identifies `path`. NotFound for a missing file; Corruption (naming the file and what was
// expected) for anything that is not a trace, graph or plan.
Status SniffFile(const std::string& path, FileKind* kind);

}  // namespace ivytrace
