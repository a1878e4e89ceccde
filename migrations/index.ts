import { CreateApplication1732060800000 } from './1732060800000-CreateApplication';
import { CreateWorker1732147200000 } from './1732147200000-CreateWorker';
import { CreateMeta1732320000000 } from './1732320000000-CreateMeta';
import { AddDeploymentId1732406400000 } from './1732406400000-AddDeploymentId';
import { EntitySpacingCompatSecrets1764115200000 } from './1764115200000-EntitySpacingCompatSecrets';
import { BusinessNumbers1764201600000 } from './1764201600000-BusinessNumbers';
import { HeldAndLiveEntities1764288000000 } from './1764288000000-HeldAndLiveEntities';
import { IncumbentAlias1764374400000 } from './1764374400000-IncumbentAlias';
import { GaplessSeries1764460800000 } from './1764460800000-GaplessSeries';

/** Every schema migration, in order. Run at start-up and by `npm run migration:run`. */
export const migrations = [
  CreateApplication1732060800000,
  CreateWorker1732147200000,
  CreateMeta1732320000000,
  AddDeploymentId1732406400000,
  EntitySpacingCompatSecrets1764115200000,
  BusinessNumbers1764201600000,
  HeldAndLiveEntities1764288000000,
  IncumbentAlias1764374400000,
  GaplessSeries1764460800000,
];
