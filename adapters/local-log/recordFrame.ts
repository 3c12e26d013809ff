/**
 * On-disk framing of the local log. A segment file is an 8-byte header followed by frames:
 *
 *   header  magic "FSLG" | u32 version (1)
 *   frame   u32 bodyLength | u32 crc32(body) | body
 *   body    u32 offsetLo | u32 offsetHi | u32 timestampLo | u32 timestampHi | u32 keyLength | key (UTF-8) | value
 *
 * All integers little-endian. The checksum covers the whole body, so a torn write, a garbled length
 * or a flipped bit anywhere in a record is detected; the absolute offset inside the body lets the
 * reader notice misplaced data (a frame whose offset is not the next one expected).
 */
import { crc32 } from 'node:zlib';

export const SEGMENT_MAGIC = 0x474c5346; // "FSLG" read as u32 LE
export const SEGMENT_VERSION = 1;
export const SEGMENT_HEADER_BYTES = 8;
export const FRAME_HEADER_BYTES = 8;
export const BODY_FIXED_BYTES = 20;
export const FRAME_OVERHEAD = FRAME_HEADER_BYTES + BODY_FIXED_BYTES;
/** Hard upper bound of one record's key + value, whatever limit the writer used. */
export const MAX_RECORD_BYTES_LIMIT = 64 * 1024 * 1024;
const MAX_BODY_BYTES = BODY_FIXED_BYTES + MAX_RECORD_BYTES_LIMIT;
const TWO_32 = 0x1_0000_0000;

/** checkFrame results below zero. */
export const FRAME_INCOMPLETE = -1;
export const FRAME_BAD_LENGTH = -2;
export const FRAME_BAD_CRC = -3;

export function writeSegmentHeader(buf: Buffer, pos: number): void {
  buf.writeUInt32LE(SEGMENT_MAGIC, pos);
  buf.writeUInt32LE(SEGMENT_VERSION, pos + 4);
}

export function segmentHeader(): Buffer {
  const buf = Buffer.allocUnsafe(SEGMENT_HEADER_BYTES);
  writeSegmentHeader(buf, 0);
  return buf;
}

/** 'ok', 'zero' (never written: a torn creation), or 'foreign' (not a segment of this version). */
export function checkSegmentHeader(buf: Buffer): 'ok' | 'zero' | 'foreign' {
  if (buf.length < SEGMENT_HEADER_BYTES) return buf.every((b) => b === 0) ? 'zero' : 'foreign';
  const magic = buf.readUInt32LE(0);
  const version = buf.readUInt32LE(4);
  if (magic === SEGMENT_MAGIC && version === SEGMENT_VERSION) return 'ok';
  if (magic === 0 && version === 0) return 'zero';
  return 'foreign';
}

export function frameBytes(keyBytes: number, valueBytes: number): number {
  return FRAME_OVERHEAD + keyBytes + valueBytes;
}

/** Writes one frame at `pos` (the caller sized `buf` with frameBytes) and returns the end position. */
export function writeFrame(buf: Buffer, pos: number, offset: number, timestamp: number, key: string, keyBytes: number, value: Uint8Array): number {
  const body = pos + FRAME_HEADER_BYTES;
  const bodyLength = BODY_FIXED_BYTES + keyBytes + value.length;
  buf.writeUInt32LE(bodyLength, pos);
  buf.writeUInt32LE(offset % TWO_32, body);
  buf.writeUInt32LE(Math.floor(offset / TWO_32), body + 4);
  buf.writeUInt32LE(timestamp % TWO_32, body + 8);
  buf.writeUInt32LE(Math.floor(timestamp / TWO_32), body + 12);
  buf.writeUInt32LE(keyBytes, body + 16);
  const keyStart = body + BODY_FIXED_BYTES;
  if (keyBytes > 0) buf.write(key, keyStart, keyBytes, 'utf8');
  buf.set(value, keyStart + keyBytes);
  const end = body + bodyLength;
  buf.writeUInt32LE(crc32(buf.subarray(body, end)), pos + 4);
  return end;
}

/**
 * Checks the frame starting at `pos` of `buf` (valid bytes end at `end`). Returns its total size when
 * the frame is complete and its checksum matches, FRAME_INCOMPLETE when more bytes are needed (the
 * size needed is then frameSizeAt), FRAME_BAD_LENGTH for an impossible length and FRAME_BAD_CRC for
 * a checksum mismatch.
 */
export function checkFrame(buf: Buffer, pos: number, end: number): number {
  if (end - pos < FRAME_HEADER_BYTES) return FRAME_INCOMPLETE;
  const bodyLength = buf.readUInt32LE(pos);
  if (bodyLength < BODY_FIXED_BYTES || bodyLength > MAX_BODY_BYTES) return FRAME_BAD_LENGTH;
  const size = FRAME_HEADER_BYTES + bodyLength;
  if (end - pos < size) return FRAME_INCOMPLETE;
  const body = pos + FRAME_HEADER_BYTES;
  if (crc32(buf.subarray(body, pos + size)) !== buf.readUInt32LE(pos + 4)) return FRAME_BAD_CRC;
  if (buf.readUInt32LE(body + 16) > bodyLength - BODY_FIXED_BYTES) return FRAME_BAD_LENGTH;
  return size;
}

/** Total size of the frame at `pos` as its length field claims (needs FRAME_HEADER_BYTES available). */
export function frameSizeAt(buf: Buffer, pos: number): number {
  return FRAME_HEADER_BYTES + buf.readUInt32LE(pos);
}

export function frameOffset(buf: Buffer, pos: number): number {
  const body = pos + FRAME_HEADER_BYTES;
  return buf.readUInt32LE(body) + buf.readUInt32LE(body + 4) * TWO_32;
}

export function frameTimestamp(buf: Buffer, pos: number): number {
  const body = pos + FRAME_HEADER_BYTES;
  return buf.readUInt32LE(body + 8) + buf.readUInt32LE(body + 12) * TWO_32;
}

/** Key and value of a checked frame; the value is a view of `buf`, not a copy. */
export function frameKey(buf: Buffer, pos: number): string {
  const keyStart = pos + FRAME_OVERHEAD;
  return buf.toString('utf8', keyStart, keyStart + buf.readUInt32LE(pos + FRAME_HEADER_BYTES + 16));
}

export function frameValue(buf: Buffer, pos: number, size: number): Buffer {
  const valueStart = pos + FRAME_OVERHEAD + buf.readUInt32LE(pos + FRAME_HEADER_BYTES + 16);
  return buf.subarray(valueStart, pos + size);
}
