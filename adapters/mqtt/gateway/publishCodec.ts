/**
 * The hot packets read and written by hand: inbound PUBLISH (every uplink) and outbound PUBLISH,
 * PUBACK and PINGRESP. The others (CONNECT, SUBSCRIBE, …) go through mqtt-packet. Reading a
 * PUBLISH here also lets the topic be checked as bytes: UTF-8 well-formed and free of U+0000
 * ([MQTT-1.5.4-1], [MQTT-1.5.4-2]) — mqtt-packet decodes whatever it is given.
 */
import { isUtf8 } from 'node:buffer';
import { varintBytes } from './FrameReader.ts';

export interface InboundPublish {
  /** '' when an MQTT 5 Topic Alias stands for it. */
  topic: string;
  qos: number;
  dup: boolean;
  retain: boolean;
  packetId: number;
  payload: Buffer;
  /** MQTT 5 properties the edge reads. */
  contentType?: string;
  /** 1: the payload claims to be UTF-8 (MQTT 5 Payload Format Indicator). */
  payloadFormat?: number;
  topicAlias?: number;
}

/** Why a PUBLISH cannot be read: `malformed` closes the connection (MQTT 5 DISCONNECT 0x81), `protocol` too (0x82), `topic` refuses the topic (0x90). */
export type PublishFault = { fault: 'malformed' | 'protocol' | 'topic'; reason: string };

/** A bit per PUBLISH property a client may send (User Property, which may repeat, aside): §2.2.2.2, each at most once. */
const ONCE: Readonly<Record<number, number>> = { 0x01: 1, 0x02: 2, 0x23: 4, 0x03: 8, 0x08: 16, 0x09: 32 };

export function parsePublish(first: number, body: Buffer, v5: boolean): InboundPublish | PublishFault {
  const qos = (first >> 1) & 3;
  if (qos === 3) return { fault: 'malformed', reason: 'PUBLISH with QoS 3' };
  if (body.length < 2) return { fault: 'malformed', reason: 'PUBLISH too short' };
  const topicLength = body.readUInt16BE(0);
  let pos = 2 + topicLength;
  if (pos > body.length) return { fault: 'malformed', reason: 'topic runs past the packet' };
  // ASCII without U+0000 (every topic of the spec's shapes) is read as is; anything else is checked as UTF-8.
  let ascii = true;
  for (let i = 2; i < pos; i++) {
    const b = body[i];
    if (b === 0 || b > 0x7f) {
      ascii = false;
      break;
    }
  }
  let topic: string;
  if (ascii) topic = body.toString('latin1', 2, pos);
  else {
    const topicBytes = body.subarray(2, pos);
    if (!isUtf8(topicBytes) || topicBytes.includes(0)) return { fault: 'topic', reason: 'topic name is not well-formed UTF-8' };
    topic = topicBytes.toString('utf8');
  }
  let packetId = 0;
  if (qos > 0) {
    if (pos + 2 > body.length) return { fault: 'malformed', reason: 'packet identifier missing' };
    packetId = body.readUInt16BE(pos);
    pos += 2;
    if (packetId === 0) return { fault: 'malformed', reason: 'packet identifier 0' };
  }
  const out: InboundPublish = { topic, qos, dup: (first & 8) !== 0, retain: (first & 1) !== 0, packetId, payload: body };
  if (v5) {
    const read = readVarint(body, pos);
    if (read === undefined) return { fault: 'malformed', reason: 'property length malformed' };
    pos = read.next;
    const propsEnd = pos + read.value;
    if (propsEnd > body.length) return { fault: 'malformed', reason: 'properties run past the packet' };
    let seen = 0;
    while (pos < propsEnd) {
      const id = body[pos++];
      const bit = ONCE[id] ?? 0;
      if ((seen & bit) !== 0) return { fault: 'protocol', reason: `property 0x${id.toString(16)} given more than once` };
      seen |= bit;
      switch (id) {
        case 0x01: out.payloadFormat = body[pos++]; break;
        case 0x02: pos += 4; break;
        case 0x23: out.topicAlias = body.readUInt16BE(pos); pos += 2; break;
        case 0x03: case 0x08: case 0x09: {
          if (pos + 2 > propsEnd) return { fault: 'malformed', reason: 'property runs past the properties' };
          const n = body.readUInt16BE(pos);
          if (id === 0x03) out.contentType = body.toString('utf8', pos + 2, pos + 2 + n);
          pos += 2 + n;
          break;
        }
        case 0x26: {
          for (let k = 0; k < 2 && pos + 2 <= propsEnd; k++) pos += 2 + body.readUInt16BE(pos);
          break;
        }
        // [MQTT-3.3.4-6]: a Subscription Identifier is the server's to send.
        case 0x0b: return { fault: 'protocol', reason: 'a PUBLISH from a client carries no Subscription Identifier' };
        default: return { fault: 'malformed', reason: `property 0x${id.toString(16)} not allowed in PUBLISH` };
      }
    }
    if (pos !== propsEnd) return { fault: 'malformed', reason: 'properties run past their length' };
  }
  if (out.topic.length === 0 && out.topicAlias === undefined) return { fault: 'topic', reason: 'empty topic name' };
  if (out.topic.includes('+') || out.topic.includes('#')) return { fault: 'topic', reason: 'wildcards in a topic name' };
  out.payload = body.subarray(pos);
  return out;
}

function readVarint(buf: Buffer, pos: number): { value: number; next: number } | undefined {
  let value = 0;
  let multiplier = 1;
  for (let i = 0; i < 4; i++) {
    if (pos >= buf.length) return undefined;
    const byte = buf[pos++];
    value += (byte & 0x7f) * multiplier;
    if ((byte & 0x80) === 0) return { value, next: pos };
    multiplier *= 128;
  }
  return undefined;
}

/** An outbound PUBLISH without properties (feeds, commands); MQTT 5 carries an empty property length. */
export function encodePublish(topic: Buffer, payload: Uint8Array, qos: 0 | 1, packetId: number, v5: boolean): Buffer {
  const remaining = 2 + topic.length + (qos > 0 ? 2 : 0) + (v5 ? 1 : 0) + payload.length;
  const header = varintBytes(remaining);
  const out = Buffer.allocUnsafe(1 + header.length + remaining);
  let pos = 0;
  out[pos++] = 0x30 | (qos << 1);
  for (const b of header) out[pos++] = b;
  out.writeUInt16BE(topic.length, pos);
  pos += 2;
  topic.copy(out, pos);
  pos += topic.length;
  if (qos > 0) {
    out.writeUInt16BE(packetId, pos);
    pos += 2;
  }
  if (v5) out[pos++] = 0;
  out.set(payload, pos);
  return out;
}

/** PUBACK of an accepted publish; reason code 0 is left out in MQTT 5 ([MQTT-3.4.2.1]). */
export function encodePuback(packetId: number): Buffer {
  return Buffer.from([0x40, 2, packetId >> 8, packetId & 0xff]);
}

export const PINGRESP = Buffer.from([0xd0, 0]);
