/**
 * A raw MQTT connection for tests of what the edge answers to packets no client library would send:
 * bytes go out as written, every packet the edge sends back is parsed (mqtt-packet) and kept.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import mqttPacket from 'mqtt-packet';

export interface Raw {
  socket: Socket;
  packets: mqttPacket.Packet[];
  closed: Promise<void>;
  isClosed(): boolean;
}

export async function raw(port: number, version: 4 | 5 = 4): Promise<Raw> {
  const socket = tcpConnect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const packets: mqttPacket.Packet[] = [];
  const parser = mqttPacket.parser({ protocolVersion: version });
  parser.on('packet', (p) => packets.push(p));
  parser.on('error', () => undefined);
  socket.on('data', (chunk) => parser.parse(chunk));
  let isClosed = false;
  const closed = new Promise<void>((resolve) => socket.once('close', () => { isClosed = true; resolve(); }));
  await new Promise<void>((resolve, reject) => { socket.once('connect', resolve); socket.once('error', reject); });
  return { socket, packets, closed, isClosed: () => isClosed };
}
