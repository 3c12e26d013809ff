/**
 * The MQTT edge contract (test/contracts/mqttEdge.contract.ts) run against the embedded gateway and
 * against external broker mode on a Mosquitto of its own (skipped without the mosquitto binary).
 */
import { unless } from '../../support/suite.ts';
import { mqttEdgeContract } from '../../contracts/mqttEdge.contract.ts';
import { mosquittoMissing } from '../../support/mosquittoProcess.ts';
import { embeddedWorld, externalWorld } from '../../support/mqttEdgeWorlds.ts';

mqttEdgeContract('embedded gateway', embeddedWorld);
unless('mqtt edge contract: external broker', mosquittoMissing(), () => mqttEdgeContract('external broker (Mosquitto)', externalWorld));
