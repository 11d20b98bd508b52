"""One region begin/end for every framework recorder (torch, NumPy, JAX).

A region is framed the same way everywhere: a fresh region id, a RegionBegin record with the
named inputs, a new frame of known tensors, the inputs' values (role REGION_INPUT); at the end a
RegionEnd record with the result, the result's values (REGION_OUTPUT), and the frames closed up
to the region's own. What differs per framework is behind the hooks below.
"""
from __future__ import annotations

from ivytrace.recorder.sym import SymValue
from ivytrace.recorder.writer import TAG_REGION_BEGIN, TAG_REGION_END
from ivytrace.v1 import common_pb2, trace_pb2


class RegionFraming:
    """Mixin: `region_begin` / `region_end`. The recorder has `w`, `_intern`, `_regions` (open
    region ids, innermost last), `_next_region`, and implements:

      _records_regions() -> bool        recording on this thread (else region_begin returns 0)
      _quiet()                          a context manager: the recorder's own calls are not recorded
      _region_encoder                   the ArgEncoder of region inputs and results
      _encode_region_input(v, tensors, extra) -> Arg bytes   (default: the encoder; a number's
                                        stand-in goes to `extra`)
      _enter_frame() / _leave_frame()   push a new frame / close the innermost one
      _bind_region_inputs(rid, tensors, extra, file, line)   the inputs are known in the new frame;
                                        their values written (REGION_INPUT), guards added
      _define_region_result(tensors)    values the result holds that the frame does not know
      _write_region_outputs(tensors)    the REGION_OUTPUT values
    """

    def _encode_region_input(self, v, tensors, extra) -> bytes:
        # A Python number the caller passed (api.py made it a stand-in, recorder/sym.py): named in
        # RegionBegin as a value of its own; `_bind_region_inputs` defines it in the new frame.
        if isinstance(v, SymValue) and v._expr[0] == "input":
            extra.append(v)
            return self._sym_input_ref(v)
        return self._region_encoder.encode(v, tensors)

    def region_begin(self, name, inputs, file="", line=0) -> int:
        """Write RegionBegin (inputs: list of (name, value)) and the inputs' values; the region id."""
        if not self._records_regions():
            return 0
        with self._quiet():
            rid = self._next_region
            self._next_region += 1
            tensors = []
            extra = []
            named = [common_pb2.NamedArg(name=n, value=common_pb2.Arg.FromString(
                self._encode_region_input(v, tensors, extra))) for n, v in inputs]
            fid = self._intern(file) if file else 0
            msg = trace_pb2.RegionBegin(region=rid, name=name, inputs=named, file=fid, line=line)
            self.w.add(TAG_REGION_BEGIN, msg.SerializeToString())
            self._enter_frame()
            self._regions.append(rid)
            self._bind_region_inputs(rid, tensors, extra, file, line)
            self.w.emit()
            return rid

    def region_end(self, rid, result=None, raised=False):
        """Write RegionEnd and the result's values; close `rid` (and any region left open in it)."""
        if not rid or rid not in self._regions:
            return
        with self._quiet():
            tensors = []
            msg = trace_pb2.RegionEnd(region=rid, raised=raised)
            if not raised:
                msg.result.CopyFrom(common_pb2.Arg.FromString(self._region_encoder.encode(result, tensors)))
                self._define_region_result(tensors)
            self.w.add(TAG_REGION_END, msg.SerializeToString())
            self._write_region_outputs(tensors)
            self.w.emit()
            while self._regions:
                top = self._regions.pop()
                self._leave_frame()
                if top == rid:
                    break
