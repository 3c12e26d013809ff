/**
 * The functions code generated per device type may call (emitDecoder.ts, emitEncoder.ts): the
 * shared primitives of readers.ts and writers.ts and the error constructors, all taking what
 * they work on as arguments. The generated factory receives this object as `h` and binds each
 * entry to a local of the same name.
 */
import { FleetError } from '../kernel/errors.ts';
import { lppCutOff, lppKey, lppShort, lppUnknown } from './cayenneTable.ts';
import { asDecodeFailed, asValidationFailed, getPath, isRecord, notBytes, notCommand } from './codec.ts';
import { anyNonZero, decodeFailed, floatAt, hexAt, readUint, readWide, utf8At } from './readers.ts';
import { rawInteger, toNumber, writeBits, writeBool, writeFloat, writeHex, writeInt, writeString } from './writers.ts';

/** What the generated functions know of the device type they belong to. */
export interface TypeTag {
  /** Names the codec in its error messages. */
  readonly name: string;
}

export const generatedRuntime = Object.freeze({
  lppKey, lppCutOff, lppShort, lppUnknown,
  readUint, readWide, floatAt, anyNonZero, hexAt, utf8At, isRecord, getPath,
  toNumber, rawInteger, writeInt, writeBits, writeFloat, writeBool, writeHex, writeString,
  notBytes: (type: TypeTag) => notBytes(type.name),
  notCommand: (type: TypeTag) => notCommand(type.name),
  decodeError: (type: TypeTag, error: unknown) => asDecodeFailed(type.name, error),
  encodeError: (type: TypeTag, error: unknown) => asValidationFailed(type.name, error),
  /** `needs`: [minimum length, statement label] of each statement of the block, in order. */
  tooShort: (needs: ReadonlyArray<readonly [number, string]>, length: number) => {
    const [min, label] = needs.find(([n]) => n > length)!;
    return decodeFailed(`${label} needs ${min} bytes, the payload has ${length}`);
  },
  floatRange: (path: string, n: number) => decodeFailed(`${path}: a float needs 2, 4 or 8 bytes, the range has ${n}`),
  rangeEmpty: (path: string) => decodeFailed(`${path}: the range selects no bytes`),
  missing: (asset: string, path: string) => new FleetError('VALIDATION_FAILED', `the command has no value for asset '${asset}' (${path})`),
});
