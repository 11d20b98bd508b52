// Telling an ONNX model from ivytrace's own files, and running the Python side of `check`.
// ONNX files have no magic: a file that is not a trace, graph or plan is taken as ONNX when it
// parses as an onnx.ModelProto with a graph.
#pragma once

#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "core/io/file_kind.h"
#include "core/util/status.h"

namespace ivytrace::cli {

// SniffFile, plus ONNX models (kOnnx). The error names the file and the formats expected.
Status SniffArtifact(const std::string& path, FileKind* kind);

// Reads an ONNX model; Corruption (naming the file) when it does not parse.
Status ReadOnnxModel(const std::string& path, onnx::ModelProto* model);

// The interpreter `check` runs its helper with: `flag` if given, else $IVYTRACE_PYTHON, else
// $VIRTUAL_ENV/bin/python, else the .venv of the source checkout this binary was built in, else
// python3 on PATH.
std::string FindPython(const std::string& flag);

// A directory to put on PYTHONPATH so that `import ivytrace` finds the package that belongs to
// this binary (a source checkout's python/, or the site-packages of a wheel), or "".
std::string PackageDirBesideBinary();

// Runs argv (argv[0] looked up on PATH) with `extra_env` added, collecting its stdout; stderr
// passes through. `exit_status` gets the exit status (127 when it cannot be run).
Status RunCollectingStdout(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                           std::string* out, int* exit_status);

}  // namespace ivytrace::cli
