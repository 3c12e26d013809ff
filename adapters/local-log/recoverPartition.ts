/**
 * Opening a partition directory: lists its segments and verifies the last one record by record,
 * because only the last segment can hold a torn write (a segment is fsynced before the next one is
 * created). Verification stops at the first record that is incomplete, has an impossible length, a
 * wrong checksum or an unexpected offset; the file is truncated there and the damage reported.
 * Cutting at the first bad record (rather than skipping it) keeps offsets consecutive: a length field
 * that cannot be trusted gives no safe way to find the next record anyway.
 */
import { closeSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readSync, readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { FleetError } from '../../engine/kernel/errors.ts';
import type { CorruptionReport } from './LocalLogOptions.ts';
import { checkFrame, checkSegmentHeader, frameOffset, frameSizeAt, FRAME_BAD_CRC, FRAME_INCOMPLETE, SEGMENT_HEADER_BYTES, segmentHeader } from './recordFrame.ts';
import { parseSegmentFileName, Segment, segmentFileName } from './Segment.ts';

export interface RecoveredPartition {
  segments: Segment[];
  /** Offset the next appended record gets. */
  nextOffset: number;
}

const SCAN_CHUNK_BYTES = 1024 * 1024;

function readHeader(fd: number): Buffer {
  const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
  const n = readSync(fd, header, 0, SEGMENT_HEADER_BYTES, 0);
  return header.subarray(0, n);
}

function foreign(file: string): FleetError {
  return new FleetError('CORRUPT_LOG', `${file} is not a local log segment (bad header); remove it or restore the data dir`, { detail: { file } });
}

/** `durableWrites`: how the last segment is opened for writing (Segment.ts). */
export function recoverPartition(dir: string, topic: string, partition: number, report: (r: CorruptionReport) => void, durableWrites = true): RecoveredPartition {
  mkdirSync(dir, { recursive: true });
  const bases = readdirSync(dir).map(parseSegmentFileName).filter((b): b is number => b !== undefined).sort((a, b) => a - b);
  const segments: Segment[] = [];
  for (let i = 0; i < bases.length - 1; i++) {
    const file = join(dir, segmentFileName(bases[i]));
    const fd = openSync(file, 'r');
    try {
      if (checkSegmentHeader(readHeader(fd)) !== 'ok') throw foreign(file);
    } finally {
      closeSync(fd);
    }
    segments.push(new Segment(dir, bases[i], statSync(file).size, false));
  }
  if (bases.length === 0) return { segments, nextOffset: 0 };
  const tail = recoverTail(dir, topic, partition, bases[bases.length - 1], report, durableWrites);
  segments.push(tail.segment);
  return { segments, nextOffset: tail.nextOffset };
}

function recoverTail(dir: string, topic: string, partition: number, base: number, report: (r: CorruptionReport) => void, durableWrites: boolean): { segment: Segment; nextOffset: number } {
  const file = join(dir, segmentFileName(base));
  const fd = openSync(file, 'r+');
  try {
    const size = statSync(file).size;
    const header = readHeader(fd);
    const state = header.length < SEGMENT_HEADER_BYTES && header.every((b) => b === 0) ? 'zero' : checkSegmentHeader(header);
    if (state === 'foreign' && header.length === SEGMENT_HEADER_BYTES) throw foreign(file);
    if (state !== 'ok') {
      // The header goes to disk in the same write as the segment's first records: a missing or
      // partial header means that write never completed, so nothing in the file was acknowledged.
      if (size > 0) report({ topic, partition, file, position: 0, offset: base, reason: 'header', action: 'cut', bytesCut: size });
      ftruncateSync(fd, 0);
      writeSync(fd, segmentHeader(), 0, SEGMENT_HEADER_BYTES, 0);
      fsyncSync(fd);
      return { segment: new Segment(dir, base, SEGMENT_HEADER_BYTES, true, durableWrites), nextOffset: base };
    }
    const segment = new Segment(dir, base, size, true, durableWrites);
    let buf = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    let bufStart = SEGMENT_HEADER_BYTES; // file position of buf[0]
    let bufLen = 0;
    let p = 0;
    let expected = base;
    let damage: CorruptionReport['reason'] | undefined;
    for (;;) {
      const result = checkFrame(buf, p, bufLen);
      if (result > 0) {
        if (frameOffset(buf, p) !== expected) { damage = 'sequence'; break; }
        segment.addIndexEntry(expected, bufStart + p);
        expected++;
        p += result;
        continue;
      }
      if (result !== FRAME_INCOMPLETE) { damage = result === FRAME_BAD_CRC ? 'checksum' : 'length'; break; }
      const fileEnd = bufStart + bufLen;
      if (fileEnd >= size) { if (p < bufLen) damage = 'truncated'; break; }
      const need = bufLen - p >= 8 ? frameSizeAt(buf, p) : 0;
      if (bufStart + p + need > size) { damage = 'truncated'; break; }
      // keep the partial frame, read what follows it
      const keep = bufLen - p;
      const next = Buffer.allocUnsafe(Math.max(SCAN_CHUNK_BYTES, need));
      buf.copy(next, 0, p, bufLen);
      bufStart += p;
      const n = readSync(fd, next, keep, Math.min(next.length - keep, size - fileEnd), fileEnd);
      buf = next;
      bufLen = keep + n;
      p = 0;
      if (n === 0) { damage = 'truncated'; break; }
    }
    const good = bufStart + p;
    if (damage !== undefined) {
      ftruncateSync(fd, good);
      fsyncSync(fd);
      segment.durableSize = good;
      report({ topic, partition, file, position: good, offset: expected, reason: damage, action: 'cut', bytesCut: size - good });
    }
    return { segment, nextOffset: expected };
  } finally {
    closeSync(fd);
  }
}
