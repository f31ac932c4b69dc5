package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// ensembleResource is the Ensemble custom resource (no generated clientset: the dynamic client reads it).
var ensembleResource = schema.GroupVersionResource{Group: "academy.settle.dev", Version: "v1", Resource: "ensembles"}

const childLabel = "ensemble"

// Controller keeps each Ensemble's child ConfigMaps in step with its spec.voices.
type Controller struct {
	kubeClient    kubernetes.Interface
	dynamicClient dynamic.Interface

	configMapsLister corelisters.ConfigMapLister
	configMapsSynced cache.InformerSynced
	ensemblesLister  cache.GenericLister
	ensemblesSynced  cache.InformerSynced

	// workqueue holds the keys (namespace/name) of Ensembles to sync; a key is never synced by two workers at once.
	workqueue workqueue.TypedRateLimitingInterface[string]

	// forgetFailed is the bug: a failed sync's key is forgotten, so nothing tries it again until the next event.
	forgetFailed bool
}

// NewController wires the informers' event handlers to the workqueue.
func NewController(ctx context.Context, kubeClient kubernetes.Interface, dynamicClient dynamic.Interface,
	configMapInformer coreinformers.ConfigMapInformer, ensembleInformer informers.GenericInformer, forgetFailed bool) *Controller {
	logger := klog.FromContext(ctx)
	c := &Controller{
		kubeClient:       kubeClient,
		dynamicClient:    dynamicClient,
		configMapsLister: configMapInformer.Lister(),
		configMapsSynced: configMapInformer.Informer().HasSynced,
		ensemblesLister:  ensembleInformer.Lister(),
		ensemblesSynced:  ensembleInformer.Informer().HasSynced,
		workqueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "Ensembles"}),
		forgetFailed: forgetFailed,
	}
	logger.Info("setting up event handlers", "forgetFailed", forgetFailed)
	_, err := ensembleInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueEnsemble,
		UpdateFunc: func(_, newObj interface{}) { c.enqueueEnsemble(newObj) },
	})
	utilruntime.Must(err)
	// A child's change wakes its owner, so a child deleted by someone else is created again.
	_, err = configMapInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.handleObject,
		UpdateFunc: func(oldObj, newObj interface{}) {
			if newObj.(*corev1.ConfigMap).ResourceVersion == oldObj.(*corev1.ConfigMap).ResourceVersion {
				return // a periodic resync: nothing changed
			}
			c.handleObject(newObj)
		},
		DeleteFunc: c.handleObject,
	})
	utilruntime.Must(err)
	return c
}

// Run waits for the caches, starts the workers and blocks until ctx ends; then the queue shuts down.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	defer c.workqueue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("waiting for the informers' caches to sync")
	if ok := cache.WaitForCacheSync(ctx.Done(), c.configMapsSynced, c.ensemblesSynced); !ok {
		return fmt.Errorf("failed to wait for caches to sync")
	}
	logger.Info("starting workers", "count", workers)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.runWorker, time.Second)
	}
	<-ctx.Done()
	logger.Info("shutting down workers")
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one key from the queue. It returns false only once the queue is shut down.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.workqueue.Get()
	if shutdown {
		return false
	}
	logger := klog.FromContext(ctx).WithValues("key", key)
	// Done tells the queue this key's sync is over, whatever its outcome: a key added meanwhile is handed out again.
	defer c.workqueue.Done(key)
	err := c.syncHandler(ctx, key)
	if err == nil {
		// Success resets the key's backoff.
		c.workqueue.Forget(key)
		logger.Info("synced")
		return true
	}
	if c.forgetFailed {
		c.workqueue.Forget(key)
		utilruntime.HandleErrorWithContext(ctx, err, "sync failed; dropping the key", "key", key)
		return true
	}
	// Back on the queue after the rate limiter's delay (exponential per key, and a global token bucket).
	c.workqueue.AddRateLimited(key)
	utilruntime.HandleErrorWithContext(ctx, err, "sync failed; requeued with backoff", "key", key)
	return true
}

// syncHandler makes the Ensemble's children match its spec.voices and writes what it found to its status.
func (c *Controller) syncHandler(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "invalid resource key", "key", key)
		return nil
	}
	obj, err := c.ensemblesLister.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: its children are garbage-collected with it
	}
	if err != nil {
		return err
	}
	ensemble := obj.(*unstructured.Unstructured)
	voices, _, err := unstructured.NestedInt64(ensemble.Object, "spec", "voices")
	if err != nil {
		return fmt.Errorf("spec.voices of %s: %w", key, err)
	}
	children, err := c.configMapsLister.ConfigMaps(namespace).List(labels.SelectorFromSet(labels.Set{childLabel: name}))
	if err != nil {
		return err
	}
	have := map[int64]bool{}
	for _, child := range children {
		if index, ok := voiceIndex(name, child.Name); ok && index < voices {
			have[index] = true
		}
	}
	for index := int64(0); index < voices; index++ {
		if have[index] {
			continue
		}
		if err := c.createChild(ctx, ensemble, index); err != nil {
			return err
		}
		have[index] = true
	}
	return c.updateStatus(ctx, ensemble, int64(len(have)))
}

func (c *Controller) createChild(ctx context.Context, ensemble *unstructured.Unstructured, index int64) error {
	child := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-voice-%d", ensemble.GetName(), index),
			Namespace: ensemble.GetNamespace(),
			Labels:    map[string]string{childLabel: ensemble.GetName()},
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(ensemble, ensembleResource.GroupVersion().WithKind("Ensemble")),
			},
		},
		Data: map[string]string{"voice": strconv.FormatInt(index, 10)},
	}
	_, err := c.kubeClient.CoreV1().ConfigMaps(child.Namespace).Create(ctx, child, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // its name is its identity: an earlier try (or someone) created it
	}
	return err
}

// updateStatus writes readyVoices and observedGeneration, unless they are already so. Never the lister's object:
// it is the cache's, shared by every reader.
func (c *Controller) updateStatus(ctx context.Context, ensemble *unstructured.Unstructured, ready int64) error {
	current, _, _ := unstructured.NestedInt64(ensemble.Object, "status", "readyVoices")
	observed, _, _ := unstructured.NestedInt64(ensemble.Object, "status", "observedGeneration")
	if current == ready && observed == ensemble.GetGeneration() {
		return nil
	}
	copied := ensemble.DeepCopy()
	if err := unstructured.SetNestedField(copied.Object, ready, "status", "readyVoices"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(copied.Object, ensemble.GetGeneration(), "status", "observedGeneration"); err != nil {
		return err
	}
	_, err := c.dynamicClient.Resource(ensembleResource).Namespace(copied.GetNamespace()).UpdateStatus(ctx, copied, metav1.UpdateOptions{})
	return err
}

func (c *Controller) enqueueEnsemble(obj interface{}) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.workqueue.Add(key)
}

// handleObject enqueues the Ensemble that controls a ConfigMap, if one does (a tombstone's last state included).
func (c *Controller) handleObject(obj interface{}) {
	object, ok := obj.(metav1.Object)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("error decoding object, invalid type"))
			return
		}
		if object, ok = tombstone.Obj.(metav1.Object); !ok {
			utilruntime.HandleError(fmt.Errorf("error decoding tombstone, invalid type"))
			return
		}
	}
	owner := metav1.GetControllerOf(object)
	if owner == nil || owner.Kind != "Ensemble" {
		return
	}
	if _, err := c.ensemblesLister.ByNamespace(object.GetNamespace()).Get(owner.Name); err != nil {
		return // not (yet) in the cache: its own event will queue it
	}
	c.workqueue.Add(object.GetNamespace() + "/" + owner.Name)
}

// voiceIndex is the index in a child's name, if the name is one of the ensemble's children's.
func voiceIndex(ensemble, name string) (int64, bool) {
	rest, ok := strings.CutPrefix(name, ensemble+"-voice-")
	if !ok {
		return 0, false
	}
	index, err := strconv.ParseInt(rest, 10, 64)
	return index, err == nil && index >= 0
}
