/**
 * One complete packet (FrameReader.ts framed it) read by mqtt-packet: CONNECT, SUBSCRIBE,
 * UNSUBSCRIBE, DISCONNECT — what publishCodec.ts does not read by hand.
 *
 * One parser per protocol level serves every connection: a parser is an EventEmitter with a
 * BufferList stream of its own (~3.3 KB to build), and built per packet it was a tenth of what
 * connecting a device allocated. Sharing is safe because parsing is synchronous and each packet is
 * whole: a parser that ends anything but empty and error-free (a packet it reads as incomplete, a
 * malformed one, an exception) is thrown away, and its settings are set again before each packet
 * (a CONNECT replaces them with itself).
 */
import mqttPacket from 'mqtt-packet';
import { varintBytes } from './FrameReader.ts';

/** mqtt-packet's parser with the fields it keeps its options and its last error in. */
type Parser = ReturnType<typeof mqttPacket.parser> & { settings: { protocolVersion: number }; error: Error | null };

const parsers = new Map<number, Parser>();
/** What the parser being used reported, read right after its synchronous parse. */
let parsed: mqttPacket.Packet | undefined;
let failure: Error | undefined;
const onPacket = (packet: mqttPacket.Packet) => { parsed = packet; };
const onError = (error: Error) => { failure = error; };

/** The packet, or why it cannot be read (malformed, or incomplete by mqtt-packet's reading). */
export function parsePacket(version: number, first: number, body: Buffer): mqttPacket.Packet | Error {
  let parser = parsers.get(version);
  if (parser === undefined) {
    parser = mqttPacket.parser({ protocolVersion: version }) as Parser;
    parser.on('packet', onPacket);
    parser.on('error', onError);
    parsers.set(version, parser);
  }
  parser.settings = { protocolVersion: version };
  parsed = undefined;
  failure = undefined;
  let left = -1;
  try {
    left = parser.parse(Buffer.concat([Buffer.from([first, ...varintBytes(body.length)]), body]));
  } finally {
    // Not empty, or in error: it would carry this packet into the next connection's.
    if (left !== 0 || failure !== undefined || parser.error !== null || parsed === undefined) parsers.delete(version);
  }
  const packet = parsed;
  const error = failure;
  parsed = undefined;
  failure = undefined;
  if (error !== undefined) return error;
  return packet ?? new Error('incomplete packet');
}
